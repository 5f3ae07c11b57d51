"""What the twin tests share: a module's pure-Python reference loaded from its ``.py``
(whichever build is active), and the mark that skips a twin test in the pure-Python pass,
where both sides would be the reference."""

import importlib.util
import os

import pytest

from gse import _build

ROOT = _build.ROOT

twin = pytest.mark.skipif(_build.build() != "compiled",
                          reason="compares the compiled twin with the pure reference: in the "
                                 "pure-Python pass both sides are the reference")


def module_file(name):
    """The ``.py`` source of the dotted module ``name``."""
    return os.path.join(ROOT, *name.split(".")) + ".py"


def pure_module(name):
    """The pure-Python module ``name``, loaded afresh from its source under another name."""
    spec = importlib.util.spec_from_file_location("_reference_" + name.replace(".", "_"),
                                                  module_file(name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

"""Whether Mininet can run here, and its Python package from wherever it is installed.

Needs Linux, root, Debian's ``mininet`` package (its ``mnexec``) and the Python package
``mininet`` (this environment's, else Debian's copy is loaded by path):
``scripts/setup-mininet.sh`` sets both up; ``mininet_unavailable()`` says what is missing.
"""

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys

DEBIAN_PYTHON_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")
SETUP_HINT = "run scripts/setup-mininet.sh as root"


class MininetUnavailable(RuntimeError):
    """Mininet cannot run here; the message says why and what to do."""


def import_mininet():
    """The ``mininet`` package: this environment's, else Debian's loaded by path.

    Loading Debian's copy by path (``/usr/lib/python3/dist-packages/mininet``) puts only
    that package in ``sys.modules``, not the rest of Debian's dist-packages, so any Python
    (a virtual environment, pyenv) can use the system's Mininet.  Mininet 2.3 imports
    ``distutils``, gone in Python 3.12: setuptools brings it back when installed.
    Raises ``MininetUnavailable``.
    """
    errors = []
    for attempt in (_mininet_from_environment, _mininet_from_debian):
        try:
            return attempt()
        except ImportError as exc:
            _forget("mininet")
            if "distutils" in str(exc) and _have("setuptools"):
                try:
                    return attempt()
                except ImportError as again:
                    _forget("mininet")
                    exc = again
            errors.append(str(exc))
    raise MininetUnavailable("the Python package mininet is not importable (%s); %s"
                             % ("; ".join(errors), SETUP_HINT))


def _have(module):
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


def _mininet_from_environment():
    importlib.import_module("mininet.net")
    return sys.modules["mininet"]


def _mininet_from_debian():
    for base in DEBIAN_PYTHON_DIRS:
        if not os.path.isfile(os.path.join(base, "mininet", "net.py")):
            continue
        spec = importlib.machinery.PathFinder.find_spec("mininet", [base])
        if spec is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules["mininet"] = module
        spec.loader.exec_module(module)
        importlib.import_module("mininet.net")
        return module
    raise ImportError("no Debian mininet package in %s" % ", ".join(DEBIAN_PYTHON_DIRS))


def _forget(package):
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


_UNAVAILABLE: list[str | None] = []


def mininet_unavailable():
    """None when Mininet can run here, else why not (one line, with what to do)."""
    if _UNAVAILABLE:
        return _UNAVAILABLE[0]
    reason = _probe()
    _UNAVAILABLE.append(reason)
    return reason


def _probe():
    if not sys.platform.startswith("linux"):
        return "Mininet needs Linux network namespaces (this is %s)" % sys.platform
    if os.geteuid() != 0:
        return "Mininet needs root (namespaces, veths); run as root (CI does)"
    for tool, package in (("mnexec", "mininet"), ("ip", "iproute2"), ("ifconfig", "net-tools")):
        if shutil.which(tool) is None:
            return "%s not found (Debian package %s); %s" % (tool, package, SETUP_HINT)
    try:
        import_mininet()
    except MininetUnavailable as exc:
        return str(exc)
    try:
        out = subprocess.run(["mnexec", "-cdn", "ip", "-o", "link", "show", "lo"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10,
                             text=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return "mnexec cannot make a network namespace here: %s" % exc
    if out.returncode != 0:
        return "mnexec cannot make a network namespace here: %s" % out.stdout.strip()
    return None

"""The docs' generated figures (experiments/doc_figures.py): every block the script writes
is marked once in README.md or docs/*.md, and the cheap virtual-clock block is what the
script would write now -- the same on either build, since those figures are exact.
Wall-clock figures are never checked here."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "experiments"))

import doc_figures  # noqa: E402


def test_every_generated_block_is_marked_once_in_the_docs():
    marked = doc_figures.blocks_in_docs()
    wanted = [b for g in doc_figures.GROUPS for b in g.blocks]
    assert sorted(marked) == sorted(wanted)
    assert all(text.strip() for _, text in marked.values())    # none left empty


def test_the_ring_acceptance_block_is_what_the_script_writes():
    group = doc_figures.BY_NAME["ring-acceptance"]
    assert group.kind == "virtual" and not group.needs
    (path, text), = [v for b, v in doc_figures.blocks_in_docs().items() if b in group.blocks]
    assert doc_figures.rendered_blocks(group, group.measure()) == {"ring-acceptance": text}, (
        "docs/traces.md's ring all-reduce figures are stale: run python "
        "experiments/doc_figures.py --only ring-acceptance")


def test_the_htsim_column_is_the_anchors_data():
    """README's k=8 table quotes htsim from experiments/data/htsim_anchors.json."""
    (_, text), = [v for b, v in doc_figures.blocks_in_docs().items() if b == "htsim-k8"]
    rows = [line for line in text.strip().splitlines()[2:] if line.startswith("|")]
    assert [r.split("|")[-2].strip() for r in rows] == doc_figures.htsim_cells()

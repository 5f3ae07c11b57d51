from hypothesis import given
from hypothesis import strategies as st

from gse.agents.bitmap import ReceiveBitmap


@given(st.integers(1, 300).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1), max_size=3 * n))))
def test_bitmap_matches_a_set(case):
    n, arrivals = case
    bm = ReceiveBitmap(n)
    seen = set()
    for psn in arrivals:
        assert bm.mark(psn) == (psn not in seen)
        seen.add(psn)
        cum = 0
        while cum in seen:
            cum += 1
        assert bm.cum == min(cum, n)
        assert bm.count == len(seen)
        base = bm.sack_base_for(psn)
        assert base % 8 == 0
        if psn < (bm.cum & ~7) + 64:
            assert base == bm.cum & ~7      # the window starts at the cumulative point
        else:
            assert base <= psn < base + 64  # or moves up to cover a far arrival
        bits = bm.sack(base)
        for i in range(64):
            assert bool(bits >> i & 1) == (base + i in seen)
    assert bm.complete() == (len(seen) == n)


def test_sack_base_must_be_aligned():
    import pytest
    with pytest.raises(ValueError, match="multiple of 8"):
        ReceiveBitmap(100).sack(3)


def test_empty_message_refused():
    import pytest
    with pytest.raises(ValueError):
        ReceiveBitmap(0)

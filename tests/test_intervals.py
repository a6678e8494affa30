"""IntervalSet against a brute-force set of integers."""

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.intervals import IntervalSet, canonical, merge_ranges

intervals = st.lists(st.tuples(st.integers(-20, 60), st.integers(-20, 60)), max_size=25)


def brute(pairs):
    out = set()
    for a, b in pairs:
        out.update(range(a, b + 1))
    return out


@settings(max_examples=600)
@given(intervals)
def test_add_returns_exactly_the_new_integers(pairs):
    s = IntervalSet()
    seen: set[int] = set()
    for a, b in pairs:
        new = s.add(a, b)
        got = brute(new)
        assert got == set(range(a, b + 1)) - seen
        assert sum(y - x + 1 for x, y in new) == len(got)  # pieces are disjoint
        assert new == sorted(new)
        seen |= got
        assert s.total == len(seen)
    assert brute(s) == seen
    # disjoint, sorted, and never touching
    ivs = list(s)
    for (_a1, b1), (a2, _b2) in zip(ivs, ivs[1:]):
        assert b1 + 1 < a2
    assert all(a <= b for a, b in ivs)


@settings(max_examples=400)
@given(intervals, intervals, st.integers(-25, 65), st.integers(-25, 65))
def test_overlap_and_intersection_match_brute_force(p1, p2, a, b):
    s1, s2 = IntervalSet(p1), IntervalSet(p2)
    assert s1.intersection_total(s2) == len(brute(p1) & brute(p2))
    assert s1.overlap(a, b) == len(brute(p1) & set(range(a, b + 1)))
    for x in range(-22, 62):
        assert (x in s1) == (x in brute(p1))


def test_touching_intervals_merge():
    s = IntervalSet([(1, 3), (4, 6)])
    assert list(s) == [(1, 6)]
    assert s.add(0, 10) == [(0, 0), (7, 10)]
    assert s.total == 11


def test_reversed_interval_adds_nothing():
    s = IntervalSet()
    assert s.add(5, 2) == []
    assert s.total == 0 and not s


@settings(max_examples=400)
@given(intervals)
def test_from_ranges_equals_adding_one_by_one(pairs):
    one_by_one = IntervalSet()
    for a, b in pairs:
        one_by_one.add(a, b)
    built = IntervalSet.from_ranges(pairs)
    assert built == one_by_one and built.total == one_by_one.total


@settings(max_examples=600)
@given(intervals, intervals)
def test_add_set_equals_adding_one_by_one(have, step):
    """A step's intervals merged in one pass make the set, and hand back the integers,
    that one ``add`` per interval would."""
    one_by_one, batched = IntervalSet(have), IntervalSet(have)
    before = brute(have)
    pieces = []
    for a, b in IntervalSet.from_ranges(step):
        pieces.extend(one_by_one.add(a, b))
    got, added = batched.add_set(IntervalSet.from_ranges(step))
    assert batched == one_by_one and batched.total == one_by_one.total
    assert brute(got) == brute(pieces) == brute(step) - before
    assert added == len(brute(got)) == sum(y - x + 1 for x, y in got)
    assert got == sorted(got)
    assert all(b1 < a2 for (_a1, b1), (a2, _b2) in zip(got, got[1:]))


@settings(max_examples=600)
@given(intervals, intervals, st.data())
def test_a_step_partly_read_before_adds_what_one_add_each_would(have, fresh, data):
    """A search step whose hits fall partly inside what was read (held whole by one
    interval of the set: they are dropped before the merge) and partly outside."""
    held = list(IntervalSet(have))
    again = []
    for a, b in held:
        x = data.draw(st.integers(a, b))
        again.append((x, data.draw(st.integers(x, b))))
    step = again + fresh
    one_by_one, batched = IntervalSet(have), IntervalSet(have)
    pieces = [p for a, b in IntervalSet.from_ranges(step) for p in one_by_one.add(a, b)]
    got, added = batched.add_set(IntervalSet.from_ranges(step))
    assert batched == one_by_one and batched.total == one_by_one.total
    assert brute(got) == brute(pieces) == brute(step) - brute(have)
    assert added == sum(y - x + 1 for x, y in got) and got == sorted(got)
    assert all(b1 < a2 for (_a1, b1), (a2, _b2) in zip(got, got[1:]))


@settings(max_examples=400)
@given(intervals, intervals)
def test_overlap_sorted_sums_the_overlap_of_each_piece(have, pieces):
    s = IntervalSet(have)
    sorted_pieces = list(IntervalSet.from_ranges(pieces))
    assert s.overlap_sorted(sorted_pieces) == sum(s.overlap(a, b) for a, b in sorted_pieces)


@settings(max_examples=600)
@given(intervals)
def test_canonical_says_when_ranges_are_merged_already(pairs):
    """``canonical`` gives the ranges' starts and ends exactly when merging them would
    change nothing, so the sets made from its lists are the merged sets."""
    merged = canonical(pairs)
    if merged is None:
        assert not pairs or merge_ranges(pairs) != [tuple(r) for r in pairs]
    else:
        assert list(zip(*merged)) == merge_ranges(pairs) == [tuple(r) for r in pairs]
        assert IntervalSet.of_canonical(*merged) == IntervalSet.from_ranges(pairs)
        assert IntervalSet.of_canonical(*merged).total == IntervalSet.from_ranges(pairs).total
    assert canonical(merge_ranges(pairs)) is not None or not merge_ranges(pairs)

"""Means are summed left to right on every Python (docs/metrics.md §4)."""

from __future__ import annotations

from functools import reduce
from operator import add

from hypothesis import given
from hypothesis import strategies as st

from streameval.scoring.sums import left_mean, left_sum

# A list where compensated summation (CPython >= 3.12's builtin sum) and plain
# left-to-right addition disagree in the last place.
KNOWN = [0.1] * 10


def test_left_sum_is_plain_addition_on_a_known_case():
    assert left_sum(KNOWN) == 0.9999999999999999  # 3.12's sum() gives 1.0
    assert left_mean([1 / 3, 1 / 3, 1 / 3]) == (1 / 3 + 1 / 3 + 1 / 3) / 3


@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=60))
def test_left_sum_equals_the_reduction(values):
    assert left_sum(values) == reduce(add, values, 0.0)
    assert left_mean(values) == (reduce(add, values, 0.0) / len(values) if values else None)

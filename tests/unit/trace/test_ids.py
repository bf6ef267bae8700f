"""trace/ids.py: the same answers as np.unique, by a mask or one sort."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from trainprof.trace.ids import distinct


def test_distinct_by_hand():
    out = distinct(np.array([5, 1, 5, 0, 3, 1]), 7)
    assert out.tolist() == [0, 1, 3, 5]
    assert distinct(np.zeros(0, dtype=np.int64), 4).tolist() == []


@given(st.integers(1, 200).flatmap(lambda size: st.tuples(
    st.just(size), arrays(np.int64, st.integers(0, 300), elements=st.integers(0, size - 1)))))
def test_distinct_equals_np_unique(case):
    size, ids = case
    assert distinct(ids, size).tolist() == np.unique(ids).tolist()


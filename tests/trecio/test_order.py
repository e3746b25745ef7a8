"""Topic ids in the order people read them (trecio.topic_order_key)."""

from hypothesis import given
from hypothesis import strategies as st

from trecio import topic_order_key


def test_numbers_inside_ids_sort_as_numbers():
    ids = ["d10", "c1_1", "d2", "31_10", "d11", "d1", "31_2", "c1_10", "c1_2", "31_1"]
    assert sorted(ids, key=topic_order_key) == [
        "31_1", "31_2", "31_10", "c1_1", "c1_2", "c1_10", "d1", "d2", "d10", "d11",
    ]  # fmt: skip


@given(st.lists(st.text(alphabet="ad0123_9", min_size=1, max_size=6), min_size=2, max_size=8))
def test_keys_of_any_two_ids_compare(ids):
    # digits and text at the same place compare (no TypeError), and the order is consistent
    ordered = sorted(ids, key=topic_order_key)
    for a, b in zip(ordered, ordered[1:], strict=False):
        assert topic_order_key(a) <= topic_order_key(b)

"""Spark offset JSON: stable order, string keys, strict parsing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from datasource.offsets import TopicPartition, from_json_dict, to_json_dict
from spark_stream.errors import InvalidRequestError


def test_order_is_stable_whatever_the_insertion_order() -> None:
    a = {TopicPartition("b", 10): 1, TopicPartition("b", 2): 2, TopicPartition("a", 0): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(to_json_dict(a)) == json.dumps(to_json_dict(b))
    assert json.dumps(to_json_dict(a)) == '{"a": {"0": 3}, "b": {"2": 2, "10": 1}}'


@given(
    st.dictionaries(
        st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 500)),
        st.integers(0, 2**62),
        max_size=20,
    )
)
def test_round_trip_through_json_text(raw: dict[tuple[str, int], int]) -> None:
    offsets = {TopicPartition(t, p): o for (t, p), o in raw.items()}
    text = json.dumps(to_json_dict(offsets))
    assert from_json_dict(json.loads(text)) == offsets


@pytest.mark.parametrize(
    "bad",
    [
        [1],
        {"t": 3},
        {"t": {"x": 1}},
        {"t": {"-1": 1}},
        {"t": {"0": -1}},
        {"t": {"0": "1"}},
        {"t": {"0": True}},
    ],
)
def test_malformed_offsets_are_rejected(bad: object) -> None:
    with pytest.raises(InvalidRequestError):
        from_json_dict(bad)  # type: ignore[arg-type]

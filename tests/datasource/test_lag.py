"""A query's lag from its progress reports: table tests, no Spark."""

from __future__ import annotations

from typing import Any

import pytest

from datasource.lag import behind_latest_metrics, offsets_behind_latest
from spark_stream.errors import InvalidRequestError


@pytest.mark.parametrize(
    ("source", "behind"),
    [
        ({"endOffset": None, "latestOffset": None}, {}),  # before the first batch
        ({"endOffset": {"t": {"0": 10}}, "latestOffset": {"t": {"0": 40}}}, {"t-0": 30}),
        ({"endOffset": '{"t":{"0":40}}', "latestOffset": '{"t":{"0":40}}'}, {"t-0": 0}),
        (  # a partition the batch has not read yet counts from 0
            {"endOffset": {"t": {"0": 5}}, "latestOffset": {"t": {"0": 5, "1": 7}}},
            {"t-0": 0, "t-1": 7},
        ),
        (  # latest below end (a limit planned past an older look): never negative
            {"endOffset": {"t": {"0": 9}}, "latestOffset": {"t": {"0": 8}}},
            {"t-0": 0},
        ),
        (
            {
                "endOffset": {"a": {"0": 1}, "b": {"0": 2}},
                "latestOffset": {"a": {"0": 3}, "b": {"0": 2}},
            },
            {"a-0": 2, "b-0": 0},
        ),
    ],
)
def test_offsets_behind_latest(source: dict[str, Any], behind: dict[str, int]) -> None:
    assert offsets_behind_latest(source) == behind


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", {"t": 5}])
def test_an_offset_of_another_source_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidRequestError, match="not a fluvio offset"):
        offsets_behind_latest({"endOffset": None, "latestOffset": bad})


def test_the_summary_matches_the_jvm_connector_metrics() -> None:
    assert behind_latest_metrics({}) == {}
    assert behind_latest_metrics({"t-0": 0, "t-1": 10, "t-2": 5}) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "10",
        "avgOffsetsBehindLatest": "5.0",
    }

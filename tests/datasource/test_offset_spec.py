"""``OffsetSpec`` and ``parse_offset_spec``: the JSON form's markers and defaults."""

from __future__ import annotations

from datasource.offset_spec import EARLIEST, LATEST, parse_offset_spec


def test_offset_json_with_earliest_and_latest_markers() -> None:
    spec = parse_offset_spec(
        '{"t": {"0": 5, "1": -2}, "u": {"3": -1}}', "startingOffsets", ending=False
    )
    assert spec.for_partition("t", 0) == 5
    assert spec.for_partition("t", 1) == EARLIEST
    assert spec.for_partition("u", 3) == LATEST
    assert spec.for_partition("t", 9) == EARLIEST  # not named: the default
    assert spec.topics() == {"t", "u"}
    ending = parse_offset_spec('{"t": {"0": 9}}', "endingOffsets", ending=True)
    assert ending.for_partition("t", 1) == LATEST

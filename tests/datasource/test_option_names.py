"""Kafka's aliases, the nearest-name suggestion and the trigger wait: pure table tests.

The suggestion table is the one ``OptionNamesTest`` of the JVM connector checks, so both
sides suggest the same name for the same typo.
"""

from __future__ import annotations

import difflib

import pytest

from datasource.option_names import READER_ALIASES, canonical_options, suggest
from datasource.options import _READER, parse_reader_options
from datasource.planning import delay_batch
from spark_stream.client.config import ISOLATION_WORDS, Isolation, parse_isolation
from spark_stream.errors import DataSourceOptionError, InvalidConfigError

_NAMES = [*_READER, *READER_ALIASES]


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("startingOffset", "startingOffsets"),
        ("STARTINGOFFSETS2", "startingOffsets"),
        ("topicz", "topic"),
        ("partition", "partitions"),
        ("subscribepattern", "subscribePattern"),
        ("kafka.isolation", "kafka.isolation.level"),
        ("isolatoin", "isolation"),
        ("endingTimestamps", "endingTimestamp"),
        ("maxTriggerDelays", "maxTriggerDelay"),
        ("offsets", "endingOffsets"),
        ("kafka.group.id", None),
        ("x", None),
        ("abcd", None),
    ],
)
def test_suggests_the_nearest_known_name(typed: str, suggested: str | None) -> None:
    assert suggest(typed, _NAMES) == suggested


def test_a_tie_goes_to_the_name_that_sorts_last() -> None:
    assert suggest("tie", ["tia", "tix"]) == "tix"
    assert suggest("ab", ["ba", "ab2", "a"]) == "ab2"


@pytest.mark.parametrize(
    ("a", "b", "ratio"),
    [("abcd", "bcda", 0.75), ("aaab", "abab", 0.5), ("ab", "ba", 0.5),
     ("topics", "topicz", 0.8333333333333334), ("", "", 1.0)],
)  # fmt: skip
def test_ratios_the_jvm_side_reproduces(a: str, b: str, ratio: float) -> None:
    assert difflib.SequenceMatcher(None, a, b).ratio() == ratio


def test_a_misspelt_option_fails_with_the_suggestion() -> None:
    with pytest.raises(DataSourceOptionError) as info:
        parse_reader_options({"topic": "t", "startingOffset": "earliest"}, "batch")
    assert str(info.value) == (
        "unknown option 'startingOffset' for format('fluvio'); did you mean 'startingOffsets'?"
    )


def test_an_alias_lands_under_its_canonical_name_with_its_spelling() -> None:
    given = canonical_options(
        {"SUBSCRIBE": "a,b", "kafka.bootstrap.servers": "h:1"}, _READER, READER_ALIASES
    )
    assert given.values == {"topics": "a,b", "endpoint": "h:1"}
    assert given.name("topics") == "subscribe"
    assert given.name("endpoint") == "kafka.bootstrap.servers"
    assert given.name("isolation") == "isolation"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a", "topics": "b"},
         "options 'topics' and 'subscribe' name one option with different values: give one"),
        ({"topicPattern": "a.*", "subscribePattern": "b.*"},
         "options 'topicPattern' and 'subscribePattern' name one option with different values"),
        ({"kafka.bootstrap.servers": "h:1", "endpoint": "h:2"},
         "options 'endpoint' and 'kafka.bootstrap.servers' name one option"),
        ({"kafka.isolation.level": "read_committed", "isolation": "uncommitted"},
         "options 'isolation' and 'kafka.isolation.level' name one option"),
        ({"subscribe": "a", "topic": "a"}, "options 'topic' and 'subscribe' contradict"),
        ({"subscribePattern": "a.*", "assign": '{"a": [0]}'},
         "options 'subscribePattern' and 'assign' contradict"),
    ],
)  # fmt: skip
def test_two_spellings_of_one_option_name_both(options: dict[str, str], message: str) -> None:
    with pytest.raises(DataSourceOptionError, match=message):
        parse_reader_options(options, "batch")


@pytest.mark.parametrize(
    ("options", "check"),
    [
        ({"subscribe": "b, a"}, lambda o: o.topics == ("b", "a")),
        ({"subscribePattern": "o.*"}, lambda o: o.topic_pattern == "o.*"),
        ({"assign": '{"t": [2, 0]}'},
         lambda o: o.topics == ("t",) and o.partitions_of("t") == (0, 2)),
        ({"topic": "t", "kafka.bootstrap.servers": "h1:9003, h2:9004"},
         lambda o: o.endpoint == "h1:9003,h2:9004"),
        ({"topic": "t", "kafka.isolation.level": "read_uncommitted"},
         lambda o: o.isolation == "uncommitted"),
        ({"topic": "t", "startingOffsetsByTimestamp": '{"t": {"1": 7}}'},
         lambda o: o.starting.time_for("t", 1) == 7 and o.starting.time_for("t", 0) is None
         and o.starting.time_strategy == "error"),
        ({"topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": 9}}'},
         lambda o: o.ending is not None and o.ending.time_for("t", 0) == 9),
    ],
)  # fmt: skip
def test_kafka_names_mean_what_ours_do(options: dict[str, str], check: object) -> None:
    opts = parse_reader_options({**options}, "batch")
    assert callable(check) and check(opts)


def test_stream_trigger_wait_options() -> None:
    opts = parse_reader_options(
        {"topic": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "2m"}, "stream"
    )
    assert (opts.min_records_per_trigger, opts.max_trigger_delay_ms) == (5, 120_000)
    default = parse_reader_options({"topic": "t", "minOffsetsPerTrigger": "5"}, "stream")
    assert default.max_trigger_delay_ms == 15 * 60 * 1000


@pytest.mark.parametrize(
    ("min_rows", "new_rows", "now_ms", "last_ms", "max_delay_ms", "waits"),
    [
        (5, 0, 1_000_000, 0, 60_000, False),  # the first trigger never waits
        (5, 4, 1_000, 500, 60_000, True),
        (5, 5, 1_000, 500, 60_000, False),
        (5, 0, 61_000, 1_000, 60_000, False),  # the delay passed
        (5, 0, 60_999, 1_000, 60_000, True),
    ],
)
def test_delay_batch(
    min_rows: int, new_rows: int, now_ms: int, last_ms: int, max_delay_ms: int, waits: bool
) -> None:
    assert delay_batch(min_rows, new_rows, now_ms, last_ms, max_delay_ms) is waits


@pytest.mark.parametrize(
    ("word", "iso"),
    [("read_committed", Isolation.COMMITTED), (" Read-Uncommitted", Isolation.UNCOMMITTED),
     ("committed", Isolation.COMMITTED), ("UNCOMMITTED", Isolation.UNCOMMITTED)],
)  # fmt: skip
def test_isolation_words_are_one_table(word: str, iso: Isolation) -> None:
    assert list(ISOLATION_WORDS) == [
        "read_committed",
        "read_uncommitted",
        "committed",
        "uncommitted",
    ]
    assert parse_isolation(word) is iso
    spark = parse_reader_options({"topic": "t", "isolation": word}, "batch")
    assert spark.isolation == iso.value


def test_a_bad_isolation_lists_the_words() -> None:
    with pytest.raises(InvalidConfigError, match="read_committed, read_uncommitted"):
        parse_isolation("dirty")

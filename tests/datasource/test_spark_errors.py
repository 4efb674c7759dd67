"""The typed error behind what Spark raises: found in the wrapper's traceback text."""

from __future__ import annotations

import pytest

from datasource.spark_errors import typed_error, typed_error_in_text
from spark_stream.errors import (
    ConnectionClosedError,
    DataSourceOptionError,
    FluvioError,
    SinkSchemaError,
    UnknownTopicError,
)

# As a planner error reaches the driver (trimmed from a real run of jobs.archive).
PLANNER = """[PYTHON_DATA_SOURCE_ERROR] Failed to generate Python data source read partitions: \
Traceback (most recent call last):
  File "/work/datasource/reader.py", line 96, in partitions
    tps = subscribed_partitions(client, opts)
  File "/work/datasource/resolve.py", line 75, in subscribed_partitions
    raise DataSourceOptionError(
spark_stream.errors.DataSourceOptionError: option 'topic(s)': topic 'nosuch' does not exist
 SQLSTATE: 38000"""

# An executor's failure: Java frames around the Python traceback, a chained exception.
EXECUTOR = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
spark_stream.errors.ConnectionClosedError: connection to spu-1 closed

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
spark_stream.errors.UnknownTopicError: topic 'gone' not found
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException"""


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        (PLANNER, DataSourceOptionError, "option 'topic(s)': topic 'nosuch' does not exist"),
        (EXECUTOR, UnknownTopicError, "topic 'gone' not found"),
        ("x\nspark_stream.errors.SinkSchemaError: column 'value' has 1 null", SinkSchemaError,
         "column 'value' has 1 null"),
        ("spark_stream.errors.FluvioError: plain", FluvioError, "plain"),
    ],
)  # fmt: skip
def test_the_last_typed_error_in_a_traceback_is_rebuilt(
    text: str, kind: type[FluvioError], message: str
) -> None:
    found = typed_error_in_text(text)
    assert type(found) is kind
    assert str(found) == message


@pytest.mark.parametrize(
    "text",
    [
        "org.apache.spark.sql.AnalysisException: [PATH_NOT_FOUND] Path does not exist",
        "mymodule.errors.UnknownTopicError: not ours",  # same class name, another module
        "spark_stream.errors.NoSuchError: not a class of ours",
        "UnknownTopicError: unqualified",
        "",
    ],
)
def test_text_without_a_typed_error_gives_none(text: str) -> None:
    assert typed_error_in_text(text) is None


def test_a_typed_error_is_itself_and_causes_are_followed() -> None:
    direct = ConnectionClosedError("cannot connect")
    assert typed_error(direct) is direct
    try:
        try:
            raise RuntimeError(PLANNER)
        except RuntimeError as inner:
            raise ValueError("wrapper without the text") from inner
    except ValueError as outer:
        found = typed_error(outer)
    assert isinstance(found, DataSourceOptionError)
    assert typed_error(RuntimeError("a bug")) is None

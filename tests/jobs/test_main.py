"""A job's command line ends like the CLI's: ``error: <message>`` and exit 1."""

from __future__ import annotations

import pytest

from jobs._main import run_job
from spark_stream.errors import UnknownTopicError

# How a planner error reaches the driver, wrapped by Spark (trimmed).
PLANNER = """[PYTHON_DATA_SOURCE_ERROR] Failed to generate Python data source read partitions: \
Traceback (most recent call last):
  File "/work/datasource/resolve.py", line 75, in subscribed_partitions
spark_stream.errors.DataSourceOptionError: option 'topic(s)': topic 'nosuch' does not exist
 SQLSTATE: 38000"""


def _raise(exc: BaseException) -> int:
    raise exc


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (UnknownTopicError("topic 'nosuch' not found"), "error: topic 'nosuch' not found"),
        (RuntimeError(PLANNER), "error: option 'topic(s)': topic 'nosuch' does not exist"),
        (FileNotFoundError(2, "No such file or directory", "x.parquet"),
         "error: [Errno 2] No such file or directory: 'x.parquet'"),
    ],
)  # fmt: skip
def test_user_errors_print_one_line_and_exit_1(
    exc: Exception, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_job(lambda: _raise(exc)) == 1
    assert capsys.readouterr().err == line + "\n"


def test_success_interrupt_and_bugs(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_job(lambda: 0) == 0
    assert run_job(lambda: _raise(KeyboardInterrupt())) == 130
    with pytest.raises(RuntimeError, match="a bug"):
        run_job(lambda: _raise(RuntimeError("a bug")))
    assert capsys.readouterr().err == ""

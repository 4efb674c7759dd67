"""The ``fluvio`` parser and its pure helpers; bad usage and typed errors as exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_stream.cli import build_parser, main
from spark_stream.cli.admin_cmds import topic_spec
from spark_stream.cli.data_cmds import (
    check_output_flags,
    format_record,
    producer_options,
    split_line,
    start_offset,
)
from spark_stream.cli.parsing import record_template
from spark_stream.client import Offset, Record
from spark_stream.errors import InvalidConfigError
from spark_stream.local.redis_server import free_port


def parse(*argv: str) -> object:
    return build_parser().parse_args(list(argv))


def test_auth_flags_parse() -> None:
    args = parse("--token", "fv1.a.b", "topic", "list")
    assert args.token == "fv1.a.b"  # type: ignore[attr-defined]
    assert parse("topic", "list").token is None  # type: ignore[attr-defined]
    assert parse("cluster", "start", "--auth").auth is True  # type: ignore[attr-defined]
    args = parse(
        "token", "create", "--principal", "w", "--grant", "a=produce", "--grant", "b*=consume",
        "--expires", "2h",
    )  # fmt: skip
    assert (args.principal, args.grant, args.expires) == ("w", ["a=produce", "b*=consume"], 7200.0)  # type: ignore[attr-defined]
    assert parse("profile", "add", "p", "h:1", "--token", "t").token == "t"  # type: ignore[attr-defined]


def test_token_create_needs_a_key_and_valid_grants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spark_stream.auth import load_key, new_key, verify, write_key

    key_file = tmp_path / "cluster.key"
    write_key(key_file, new_key())
    argv = ["token", "create", "--key-file", str(key_file), "--principal", "w"]
    assert main([*argv, "--grant", "orders=produce"]) == 0
    claims = verify(capsys.readouterr().out.strip(), load_key(key_file), now=0.0)
    assert (claims.principal, claims.describe()) == ("w", "orders=produce")
    assert main([*argv, "--grant", "orders=write"]) == 1
    assert "permissions are produce, consume, admin" in capsys.readouterr().err
    missing = ["token", "create", "--data-dir", str(tmp_path / "none"), "--principal", "w"]
    assert main([*missing, "--grant", "orders=produce"]) == 1
    assert "start the cluster with `fluvio cluster start --auth`" in capsys.readouterr().err


def test_commands_parse_like_fluvio() -> None:
    args = parse("topic", "create", "orders", "-p", "3", "-r", "2", "--retention-time", "1d")
    assert (args.name, args.partitions, args.replication, args.retention_time) == (  # type: ignore[attr-defined]
        "orders",
        3,
        2,
        "1d",
    )
    args = parse(
        "consume", "orders", "-B", "-d", "-p", "1", "-p", "2", "--isolation", "read_uncommitted"
    )
    assert args.beginning and args.disable_continuous and args.partition == [1, 2]  # type: ignore[attr-defined]
    args = parse("produce", "orders", "--key-separator", ":", "-f", "a.txt", "-f", "b.txt")
    assert args.files == ["a.txt", "b.txt"] and args.key_separator == ":"  # type: ignore[attr-defined]
    args = parse("cluster", "start", "--spus", "3", "--data-dir", "/tmp/x")
    assert args.spus == 3 and args.local_handler.__name__ == "cluster_start"  # type: ignore[attr-defined]
    args = parse("cluster", "spg", "create", "main", "--replicas", "2", "--min-id", "10")
    assert args.client_handler.__name__ == "spg_create"  # type: ignore[attr-defined]
    assert parse("topic", "list", "-O", "yaml").output == "yaml"  # type: ignore[attr-defined]
    args = parse("topic", "add-partition", "orders", "-c", "3")
    assert (args.name, args.count, args.client_handler.__name__) == (  # type: ignore[attr-defined]
        "orders",
        3,
        "topic_add_partition",
    )
    assert parse("topic", "add-partition", "orders", "--count", "2").count == 2  # type: ignore[attr-defined]
    assert parse("topic", "add-partition", "orders").count == 1  # type: ignore[attr-defined]
    # durations everywhere one is taken
    assert parse("--timeout", "500ms", "topic", "list").connect_timeout == 0.5  # type: ignore[attr-defined]
    assert parse("cluster", "start", "--timeout", "2m").timeout == 120.0  # type: ignore[attr-defined]
    assert parse("cluster", "diagnostics", "--timeout", "3").timeout == 3.0  # type: ignore[attr-defined]


def test_consume_help_states_the_time_unit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["consume", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "{{timestamp}} is microseconds since the epoch" in help_text
    assert "JSON lines (timestamp: microseconds since the epoch)" in help_text


def test_topic_create_uses_every_flag_given(tmp_path: Path) -> None:
    assert topic_spec(parse("topic", "create", "t")) == {  # type: ignore[arg-type]
        "partitions": 1,
        "replication_factor": 1,
    }
    args = parse(
        "topic", "create", "t", "-p", "2", "--segment-size", "2Ki", "--min-in-sync-replicas", "0"
    )
    spec = topic_spec(args)  # type: ignore[arg-type]
    assert (spec["partitions"], spec["segment_size"], spec["min_in_sync_replicas"]) == (2, 2048, 0)
    assignment = tmp_path / "a.json"
    assignment.write_text('[{"partition": 0, "replicas": [5001]}]')
    only_file = topic_spec(parse("topic", "create", "t", "-f", str(assignment)))  # type: ignore[arg-type]
    assert "partitions" not in only_file and len(only_file["replica_assignment"]) == 1
    for flags in (["-p", "1"], ["-r", "2"], ["-p", "1", "-r", "1"]):
        with pytest.raises(InvalidConfigError, match="cannot be combined with -f"):
            topic_spec(parse("topic", "create", "t", "-f", str(assignment), *flags))  # type: ignore[arg-type]


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["topic", "frobnicate"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["topic", "list", "-O", "xml"])


def test_unreachable_cluster_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--endpoint", f"127.0.0.1:{free_port()}", "--timeout", "2", "topic", "list"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: ") and "Traceback" not in err and len(err.splitlines()) == 1


def test_status_of_a_data_dir_never_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", "status", "--data-dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().out == f"cluster not started: no cluster in {tmp_path / 'none'}\n"
    assert main(["cluster", "status", "--data-dir", str(tmp_path / "none"), "-O", "json"]) == 1
    shown = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["endpoint"], shown["processes"]) == ("not started", None, [])


def test_bad_endpoint_is_a_typed_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--endpoint", "nonsense", "topic", "list"]) == 1
    assert capsys.readouterr().err.startswith("error: --endpoint must be 'host:port'")


def test_a_bad_fluvio_endpoint_variable_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUVIO_ENDPOINT", "nonsense")
    assert main(["topic", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: environment variable FLUVIO_ENDPOINT must be 'host:port'")
    # --endpoint still wins over the variable: the error is now the dead address's.
    dead = f"127.0.0.1:{free_port()}"
    assert main(["--endpoint", dead, "--timeout", "2", "topic", "list"]) == 1
    assert "FLUVIO_ENDPOINT" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "sep", "expected"),
    [
        (b"k:v", b":", (b"k", b"v")),
        (b"k:v:w", b":", (b"k", b"v:w")),
        (b"novalue", b":", (None, b"novalue")),
        (b"k=v", None, (None, b"k=v")),
    ],
)
def test_split_line(line: bytes, sep: bytes | None, expected: tuple[bytes | None, bytes]) -> None:
    assert split_line(line, sep) == expected


def test_start_offset_flags() -> None:
    assert start_offset(parse("consume", "t", "-B")) == Offset.beginning()  # type: ignore[arg-type]
    assert start_offset(parse("consume", "t", "--start", "5")) == Offset.absolute(5)  # type: ignore[arg-type]
    assert start_offset(parse("consume", "t", "-T", "3")) == Offset.from_end(3)  # type: ignore[arg-type]
    assert start_offset(parse("consume", "t")) == Offset.end()  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="cannot be combined"):
        start_offset(parse("consume", "t", "-B", "-T", "3"))  # type: ignore[arg-type]


def test_produce_flags_are_used_or_refused() -> None:
    args = parse("produce", "t", "--batch-size", "16Ki", "--compression", "lz4")
    options = producer_options(args)  # type: ignore[arg-type]
    assert options == {"acks": "leader", "batch_size": 16384, "compression": "lz4"}
    options = producer_options(
        parse(  # type: ignore[arg-type]
            "produce", "t", "--linger", "150ms", "--max-request-size", "100MB",
            "--isolation", "read_committed", "--delivery-semantic", "at-most-once",
        )
    )  # fmt: skip
    assert options == {
        "acks": "all",
        "linger_ms": pytest.approx(150.0),
        "max_request_bytes": 100_000_000,
        "retries": 0,
    }
    uncommitted = producer_options(parse("produce", "t", "--isolation", "read_uncommitted"))  # type: ignore[arg-type]
    assert uncommitted["acks"] == "leader"
    same = producer_options(parse("produce", "t", "--isolation", "read_committed", "--acks", "all"))  # type: ignore[arg-type]
    assert same["acks"] == "all"
    refused = [
        (["--key", "k", "--key-separator", ":"], "--key and --key-separator"),
        (["--raw", "--key-separator", ":"], "--raw and --key-separator"),
        (["--key-separator", ""], "must not be empty"),
        (["--progress"], "--progress shows the progress of files"),
        (["--isolation", "read_committed", "--acks", "leader"], "means --acks all"),
        (["--isolation", "serializable"], "must be read_committed or read_uncommitted"),
    ]
    for flags, message in refused:
        with pytest.raises(InvalidConfigError, match=message):
            producer_options(parse("produce", "t", *flags))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["produce", "t", "--batch-size", "0"], "argument --batch-size: must be positive"),
        (["produce", "t", "--linger", "5 parsecs"], "argument --linger: '5 parsecs' is not a"),
        (["produce", "t", "--max-request-size", "big"], "'big' is not a size like 1Gi"),
        (["produce", "t", "--delivery-semantic", "exactly-once"], "invalid choice"),
        (["consume", "t", "-b", "1Xi"], "argument -b/--maxbytes: '1Xi' is not a size"),
        (["consume", "t", "-H", "-3"], "argument -H/--head: must be >= 0, got -3"),
        (["consume", "t", "--end", "x"], "argument --end: 'x' is not a whole number"),
    ],
)
def test_bad_values_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and "Traceback" not in err, err


def test_consume_flags_like_fluvio() -> None:
    args = parse("consume", "t", "-H", "5", "--end", "9", "-b", "64Ki")
    assert (args.head, args.end, args.max_bytes) == (5, 9, 65536)  # type: ignore[attr-defined]
    assert start_offset(args) == Offset.from_beginning(5)  # type: ignore[arg-type]
    assert parse("consume", "t", "--head", "2", "--maxbytes", "1MB").max_bytes == 10**6  # type: ignore[attr-defined]
    for flags in (["-H", "1", "-B"], ["-H", "1", "-T", "2"], ["-H", "1", "--start", "3"]):
        with pytest.raises(InvalidConfigError, match="cannot be combined"):
            start_offset(parse("consume", "t", *flags))  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="--end 2 is before --start 5"):
        start_offset(parse("consume", "t", "--start", "5", "--end", "2"))  # type: ignore[arg-type]


def test_consume_output_flags_are_one_choice() -> None:
    check_output_flags(parse("consume", "t", "-k", "-n", "1"))  # type: ignore[arg-type]
    for flags in (["-k", "-O", "json"], ["-F", "{value}", "-k"], ["-F", "{value}", "-O", "json"]):
        with pytest.raises(InvalidConfigError, match="cannot be combined"):
            check_output_flags(parse("consume", "t", *flags))  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="-n must be at least 1"):
        check_output_flags(parse("consume", "t", "-n", "0"))  # type: ignore[arg-type]


def test_record_formats() -> None:
    record = Record(1, 7, b"k", b"v", 1_700_000_000_000_000)
    assert format_record(record, parse("consume", "t"), None) == "v"  # type: ignore[arg-type]
    assert format_record(record, parse("consume", "t", "-k"), None) == "[k] v"  # type: ignore[arg-type]
    line = format_record(record, parse("consume", "t", "-O", "json"), None)  # type: ignore[arg-type]
    assert json.loads(line) == {
        "partition": 1,
        "offset": 7,
        "key": "k",
        "value": "v",
        "timestamp": 1_700_000_000_000_000,
    }
    text = format_record(record, parse("consume", "t"), "{partition}/{offset} {key}")  # type: ignore[arg-type]
    assert text == "1/7 k"
    fluvio_style = record_template("{{key}}={{value}} @{{offset}} {{time}}")
    text = format_record(record, parse("consume", "t"), fluvio_style)  # type: ignore[arg-type]
    assert text == "k=v @7 2023-11-14T22:13:20.000Z"  # Fluvio's RFC 3339 with milliseconds
    keyless = Record(0, 0, None, b"v", 1)
    assert format_record(keyless, parse("consume", "t", "-k"), None) == "[null] v"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        (["topic", "create", "x", "--bogus"], "usage: fluvio topic create", "--bogus"),
        (["cluster", "start", "--bogus"], "usage: fluvio cluster start", "--bogus"),
        (["topic", "--bogus", "list"], "usage: fluvio topic", "--bogus"),
        (["consume"], "usage: fluvio consume", "topic"),
    ],
)
def test_bad_flags_print_the_subcommand_usage(
    argv: list[str], usage: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith(usage + " "), err
    assert f"{usage[len('usage: ') :]}: error: " in err and message in err.splitlines()[-1]

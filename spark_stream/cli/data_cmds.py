"""``fluvio produce`` and ``fluvio consume``.

``produce`` reads records from stdin (one per line, sent as they arrive) or from
files (read in chunks of lines and sent through the bulk Arrow path, with a progress
bar on a terminal); ``--key-separator`` splits each line into key and value.
``consume`` streams records of one or all partitions from the chosen start and prints
each as its value, ``[key] value``, a ``--format`` template or JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import pyarrow as pa

from spark_stream.cli.output import ProgressBar
from spark_stream.cli.parsing import record_template
from spark_stream.cli.typed_rows import rows_table
from spark_stream.client import (
    BatchMetadata,
    Fluvio,
    Isolation,
    Offset,
    Record,
    RecordMetadata,
    parse_isolation,
)
from spark_stream.errors import InvalidConfigError

__all__ = [
    "produce",
    "consume",
    "producer_options",
    "start_offset",
    "check_output_flags",
    "split_line",
    "format_record",
    "rfc3339_millis",
]

_CHUNK_BYTES = 4 << 20


def split_line(line: bytes, separator: bytes | None) -> tuple[bytes | None, bytes]:
    """``(key, value)`` of one input line; no separator (or none in the line): no key."""
    if separator:
        key, sep, value = line.partition(separator)
        if sep:
            return key, value
    return None, line


def _lines_table(lines: list[bytes], separator: bytes | None, key: bytes | None) -> pa.Table:
    if separator:
        pairs = [split_line(line, separator) for line in lines]
        keys: list[bytes | None] = [k for k, _ in pairs]
        values = [v for _, v in pairs]
    else:
        keys = [key] * len(lines)
        values = lines
    return pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})


def _file_chunks(stream: BinaryIO) -> Iterator[tuple[list[bytes], int]]:
    """Lines of a file in chunks of about 4 MiB, with the bytes each chunk consumed."""
    rest = b""
    while True:
        data = stream.read(_CHUNK_BYTES)
        if not data:
            if rest:
                yield [rest.rstrip(b"\r")], len(rest)
            return
        data = rest + data
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        body = data[:cut]
        yield [line.rstrip(b"\r") for line in body.split(b"\n")], cut + 1


def producer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The producer options ``produce``'s flags ask for; every flag given is used.

    Raises:
        InvalidConfigError: flags that cannot apply together (one would be ignored).
    """
    if args.key_separator is not None and not args.key_separator:
        raise InvalidConfigError("--key-separator: must not be empty")
    if args.key_separator is not None and args.key is not None:
        raise InvalidConfigError(
            "produce: --key and --key-separator cannot be combined "
            "(one keys every record, the other takes each line's key)"
        )
    if args.key_separator is not None and args.raw:
        raise InvalidConfigError(
            "produce: --raw and --key-separator cannot be combined "
            "(--raw sends the whole input as one record)"
        )
    if args.progress and not args.files:
        raise InvalidConfigError("produce: --progress shows the progress of files (-f)")
    options: dict[str, Any] = {"acks": _acks(args)}
    if args.linger is not None:
        options["linger_ms"] = args.linger * 1000.0
    if args.compression is not None:
        options["compression"] = args.compression
    if args.batch_size is not None:
        options["batch_size"] = args.batch_size
    if args.max_request_size is not None:
        options["max_request_bytes"] = args.max_request_size
    if args.delivery_semantic == "at-most-once":
        options["retries"] = 0  # never resent: a failed record is lost, not duplicated
    return options


_ISOLATION_ACKS = {Isolation.COMMITTED: "all", Isolation.UNCOMMITTED: "leader"}


def _acks(args: argparse.Namespace) -> str:
    """``--acks``, or what Fluvio's ``--isolation`` means for a producer (default leader).

    Raises:
        InvalidConfigError: a bad ``--isolation`` or one that contradicts ``--acks``.
    """
    if args.isolation is None:
        return str(args.acks or "leader")
    try:
        implied = _ISOLATION_ACKS[parse_isolation(args.isolation)]
    except InvalidConfigError:
        raise InvalidConfigError(
            f"--isolation: must be read_committed or read_uncommitted, got {args.isolation!r}"
        ) from None
    if args.acks is not None and args.acks != implied:
        raise InvalidConfigError(
            f"produce: --isolation {args.isolation} means --acks {implied}, not --acks {args.acks}"
        )
    return implied


def _print_landed(metas: Iterable[RecordMetadata | BatchMetadata]) -> None:
    """``-v``: where each produced record (or run of records) landed."""
    for meta in metas:
        if isinstance(meta, BatchMetadata) and meta.count != 1:
            last = meta.base_offset + meta.count - 1
            where = f"offsets={meta.base_offset}..{last}"
        else:
            where = (
                f"offset={meta.offset if isinstance(meta, RecordMetadata) else meta.base_offset}"
            )
        print(f"partition={meta.partition} {where}", file=sys.stderr)


def produce(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Send stdin lines or file contents to a topic."""
    options = producer_options(args)
    separator = args.key_separator.encode() if args.key_separator else None
    key = args.key.encode() if args.key is not None else None
    producer = fluvio.topic_producer(args.topic, **options)
    try:
        schema = producer.topic_schema()
        if schema is not None:
            _produce_typed(producer, schema.user_schema(), args, key)
        elif args.files:
            for path in args.files:
                _produce_file(producer, Path(path), args, separator, key)
        else:
            _produce_lines(producer, sys.stdin.buffer, args, separator, key)
        producer.flush()
    finally:
        producer.close()
    return 0


def _produce_typed(
    producer: Any, user: pa.Schema, args: argparse.Namespace, key: bytes | None
) -> None:
    """A typed topic takes JSON lines, one object of its columns a record."""
    if args.raw or args.key_separator is not None:
        raise InvalidConfigError(
            f"produce: topic {args.topic!r} is typed; it takes JSON lines of its columns "
            "(--raw and --key-separator do not apply)"
        )
    with contextlib.ExitStack() as stack:
        sources: list[BinaryIO] = []
        for path in args.files or ():
            try:
                sources.append(stack.enter_context(Path(path).open("rb")))
            except OSError as exc:
                raise InvalidConfigError(f"--file: cannot read {path}: {exc}") from None
        for source in sources or [sys.stdin.buffer]:
            chunk: list[bytes] = []
            for raw in source:
                line = raw.strip()
                if line:
                    chunk.append(line)
                if len(chunk) >= _TYPED_CHUNK:
                    _send_rows(producer, chunk, user, args, key)
                    chunk = []
            if chunk:
                _send_rows(producer, chunk, user, args, key)


_TYPED_CHUNK = 10_000  # JSON lines per table sent


def _send_rows(
    producer: Any, lines: list[bytes], user: pa.Schema, args: argparse.Namespace, key: bytes | None
) -> None:
    batch = producer.send_batch(rows_table(lines, user, key), partition=args.partition)
    if args.verbose:
        _print_landed(batch.result())


def _produce_file(
    producer: Any,
    path: Path,
    args: argparse.Namespace,
    separator: bytes | None,
    key: bytes | None,
) -> None:
    try:
        size = path.stat().st_size
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidConfigError(f"--file: cannot read {path}: {exc}") from None
    progress = ProgressBar(size, path.name, enabled=args.progress)
    with handle:
        if args.raw:
            future = producer.send(key, handle.read(), partition=args.partition)
            if args.verbose:
                _print_landed([future.result()])
            progress.advance(size)
        else:
            for lines, consumed in _file_chunks(handle):
                table = _lines_table(lines, separator, key)
                batch = producer.send_batch(table, partition=args.partition)
                if args.verbose:
                    _print_landed(batch.result())
                progress.advance(consumed)
    progress.close()


def _produce_lines(
    producer: Any,
    stream: BinaryIO,
    args: argparse.Namespace,
    separator: bytes | None,
    key: bytes | None,
) -> None:
    if args.raw:
        future = producer.send(key, stream.read(), partition=args.partition)
        if args.verbose:
            _print_landed([future.result()])
        return
    for raw in stream:
        line = raw.rstrip(b"\n").rstrip(b"\r")
        k, value = split_line(line, separator) if separator else (key, line)
        future = producer.send(k, value, partition=args.partition)
        if args.verbose:
            _print_landed([future.result()])


def start_offset(args: argparse.Namespace) -> Offset:
    """The start position from ``-B``, ``-H``, ``--start``, ``-T`` (default: the end).

    Raises:
        InvalidConfigError: two of them, or ``--end`` before ``--start``.
    """
    chosen = [
        name
        for name, on in (
            ("-B", args.beginning),
            ("-H", args.head is not None),
            ("--start", args.start is not None),
            ("-T", args.tail is not None),
        )
        if on
    ]
    if len(chosen) > 1:
        raise InvalidConfigError(f"consume: {' and '.join(chosen)} cannot be combined")
    if args.end is not None and args.start is not None and args.end < args.start:
        raise InvalidConfigError(
            f"consume: --end {args.end} is before --start {args.start} (--end is inclusive)"
        )
    if args.beginning:
        return Offset.beginning()
    if args.head is not None:
        return Offset.from_beginning(args.head)
    if args.start is not None:
        return Offset.absolute(args.start)
    if args.tail is not None:
        return Offset.from_end(args.tail)
    return Offset.end()


def check_output_flags(args: argparse.Namespace) -> None:
    """Refuse ``consume`` flags that would be ignored: two output choices, ``-n`` < 1.

    Raises:
        InvalidConfigError: naming the flags.
    """
    chosen = [
        flag
        for flag, on in (
            ("-O json", args.output == "json"),
            ("--format", args.format is not None),
            ("-k", args.key_value),
        )
        if on
    ]
    if len(chosen) > 1:
        raise InvalidConfigError(
            f"consume: {' and '.join(chosen)} cannot be combined (each chooses the output)"
        )
    if args.max_records is not None and args.max_records < 1:
        raise InvalidConfigError(f"consume: -n must be at least 1, got {args.max_records}")


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", errors="replace")


def rfc3339_millis(timestamp_us: int) -> str:
    """``{{time}}`` as Fluvio prints it: RFC 3339, UTC, milliseconds
    (``2023-11-14T22:13:20.123Z``)."""
    moment = datetime.fromtimestamp(timestamp_us // 1000 / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def format_record(
    record: Record, args: argparse.Namespace, template: str | None, typed: bool = False
) -> str:
    """One output line for a record, per ``--format``, ``-k`` or ``-O json``.

    A typed topic's value is its row as a JSON object: ``-O json`` nests it as is.
    """
    if args.output == "json":
        return json.dumps(
            {
                "partition": record.partition,
                "offset": record.offset,
                "key": None if record.key is None else _text(record.key),
                "value": json.loads(record.value) if typed else _text(record.value),
                "timestamp": record.timestamp_us,
            }
        )
    if template is not None:
        time_text = rfc3339_millis(record.timestamp_us)
        return template.format(
            topic=record.topic or args.topic,
            offset=record.offset,
            partition=record.partition,
            key=_text(record.key),
            value=_text(record.value),
            timestamp=record.timestamp_us,
            time=time_text,
        )
    if args.key_value:
        return f"[{_text(record.key)}] {_text(record.value)}"
    return _text(record.value)


def _typed_topics(fluvio: Fluvio) -> set[str]:
    """Names of the typed topics (their ``-O json`` values are objects)."""
    return {t.name for t in fluvio.admin().list_topics() if t.spec.topic_schema is not None}


def consume(args: argparse.Namespace, fluvio: Fluvio) -> int:
    """Print records of a topic from the chosen start."""
    check_output_flags(args)
    offset = start_offset(args)
    template = record_template(args.format) if args.format is not None else None
    out: TextIO = sys.stdout
    end_offset = args.end + 1 if args.end is not None else None
    fetch: dict[str, Any] = {} if args.max_bytes is None else {"max_bytes": args.max_bytes}
    if args.skip_corrupt_frames:
        fetch["skip_corrupt_frames"] = True
    group = None
    pattern = getattr(args, "pattern", None)  # the parser checked it goes with -g
    if getattr(args, "group", None) is not None:
        if (
            args.partition
            or end_offset is not None
            or args.start is not None
            or args.tail is not None
            or args.head is not None
        ):
            raise InvalidConfigError(
                "consume: -g cannot be combined with -p, --start, --end, -T, -H"
            )
        group = fluvio.group_consumer(
            args.topic,
            group=args.group,
            pattern=pattern,
            auto_offset_reset="earliest" if args.beginning else "latest",
            # -n may stop inside a batch: commit only what was printed, at the end
            enable_auto_commit=args.max_records is None,
            isolation=args.isolation,
            **fetch,
        )
        stream: Iterable[Record] = group.stream(args.disable_continuous)
    elif args.partition and len(args.partition) == 1:
        consumer = fluvio.partition_consumer(args.topic, args.partition[0], **fetch)
        stream = consumer.stream(
            offset,
            isolation=args.isolation,
            end_offset=end_offset,
            stop_at_end=args.disable_continuous,
        )
    else:
        multi = fluvio.consumer(args.topic, args.partition or None, **fetch)
        stream = multi.stream(
            offset,
            isolation=args.isolation,
            end_offset=end_offset,
            stop_at_end=args.disable_continuous,
        )
    typed = _typed_topics(fluvio) if args.output == "json" else set()
    count = 0
    printed: dict[tuple[str, int], int] = {}  # the next offset per partition, for -g
    try:
        for record in stream:
            is_typed = (record.topic or args.topic) in typed
            out.write(format_record(record, args, template, is_typed) + "\n")
            printed[(record.topic or args.topic, record.partition)] = record.offset + 1
            count += 1
            if args.max_records is not None and count >= args.max_records:
                break
            if not args.disable_continuous:
                out.flush()
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        if group is not None:
            # Commit exactly what was printed (-n may stop inside a batch), then leave.
            held = set(group.assignment())
            group.commit({tp: o for tp, o in printed.items() if tp in held})
            group.close()
        out.flush()
    return 0

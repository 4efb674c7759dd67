"""The ``fluvio`` command line: parser, dispatch, and errors as one line plus an exit code.

Commands follow Fluvio's CLI (``cluster``, ``topic``, ``partition``, ``produce``,
``consume``). Every typed error (``FluvioError``) prints ``error: <message>`` on stderr
and exits 1 (2 for bad usage, 130 on Ctrl-C); no traceback reaches the user. The SC is
found as every client finds it (``resolve_endpoint``): ``--endpoint``, else
``FLUVIO_ENDPOINT``, else the profile written by ``fluvio cluster start``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import sys
from collections.abc import Callable, Sequence

from spark_stream.cli import (
    admin_cmds,
    cluster_cmds,
    data_cmds,
    group_cmds,
    profile_cmds,
    token_cmds,
)
from spark_stream.cli.output import FORMATS
from spark_stream.cli.parsing import CommandParser, duration_arg, size_arg
from spark_stream.client import Fluvio, resolve_endpoint
from spark_stream.errors import FluvioError
from spark_stream.net.tls import TlsConfig

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace, Fluvio], int]


def _output_parent() -> CommandParser:
    parent = CommandParser(add_help=False)
    parent.add_argument(
        "-O", "--output", choices=FORMATS, default="table", help="output format (default table)"
    )
    return parent


def _client(
    sub: argparse._SubParsersAction[CommandParser],
    name: str,
    handler: Handler,
    help_text: str,
    output: bool = False,
) -> CommandParser:
    parents = [_output_parent()] if output else []
    parser = sub.add_parser(name, help=help_text, description=help_text, parents=parents)
    parser.set_defaults(client_handler=handler)
    return parser


def _cluster_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    cluster = sub.add_parser("cluster", help="local cluster, SPUs and SPU groups")
    csub = cluster.add_subparsers(dest="cluster_command", required=True)
    start = csub.add_parser(
        "start", help="start a local cluster (idempotent)", parents=[_output_parent()]
    )
    start.add_argument("--data-dir", help="where everything lives (default ~/.fluvio)")
    start.add_argument(
        "--spus", type=int, help="number of SPUs (default 1; a later start may only raise it)"
    )
    start.add_argument(
        "--sc-port", type=int, help="SC public port on first start (default 9003; 0: any free)"
    )
    start.add_argument("--redis-url", help="use this Redis instead of an embedded one")
    start.add_argument(
        "--redis-fsync",
        choices=("always", "everysec", "no"),
        default="everysec",
        help="appendfsync of the embedded Redis's append-only file (default everysec)",
    )
    start.add_argument(
        "--spu-mode",
        choices=("group", "custom"),
        help="SPUs from an SPU group (default) or spawned as custom SPUs",
    )
    start.add_argument(
        "--timeout",
        type=duration_arg("--timeout"),
        default=30.0,
        help="how long each start-up step may take, e.g. 30s, 2m (default 30s)",
    )
    start.add_argument(
        "--metrics",
        action="store_true",
        help="SC and SPUs serve Prometheus metrics on free loopback ports (see status)",
    )
    start.add_argument(
        "--standby-scs",
        type=int,
        help="standby SCs beside the active one (default 0; they take over when it dies)",
    )
    start.add_argument(
        "--tls",
        action="store_true",
        help="first start: every port speaks TLS, with a CA and certificates made in "
        "{data-dir}/tls; the profile tells clients to trust it",
    )
    start.add_argument(
        "--mtls",
        action="store_true",
        help="as --tls, and servers demand client certificates (the profile names the client's)",
    )
    start.add_argument(
        "--auth",
        action="store_true",
        help="clients need a token (the SC and SPUs check them; the profile gets an admin "
        "token; `fluvio token create` makes more); once on, later starts keep it on",
    )
    start.set_defaults(local_handler=cluster_cmds.cluster_start)
    for name, handler, text in (
        ("stop", cluster_cmds.cluster_stop, "stop the local cluster (data is kept)"),
        ("status", cluster_cmds.cluster_status, "show the local cluster's processes and SPUs"),
    ):
        cmd = csub.add_parser(name, help=text, parents=[_output_parent()])
        cmd.add_argument("--data-dir", help="the cluster's data directory")
        cmd.set_defaults(local_handler=handler)

    delete = csub.add_parser(
        "delete", help="stop the local cluster and remove its data (asks first)"
    )
    delete.add_argument("--data-dir", help="the cluster's data directory")
    delete.add_argument(
        "-y", "--force", action="store_true", help="do not ask (needed without a terminal)"
    )
    delete.set_defaults(local_handler=cluster_cmds.cluster_delete)
    diag = csub.add_parser(
        "diagnostics",
        help="collect the local cluster's logs, config and state into a .tar.gz",
    )
    diag.add_argument("--data-dir", help="the cluster's data directory")
    diag.add_argument("--dest", metavar="DIR", help="where the archive goes (default: here)")
    diag.add_argument(
        "--timeout",
        type=duration_arg("--timeout"),
        default=5.0,
        help="bound on each question to the SC and Redis, e.g. 5s (default)",
    )
    diag.set_defaults(local_handler=cluster_cmds.cluster_diagnostics)

    spu = csub.add_parser("spu", help="custom SPUs")
    ssub = spu.add_subparsers(dest="spu_command", required=True)
    reg = _client(ssub, "register", admin_cmds.spu_register, "register a custom SPU")
    reg.add_argument("--id", type=int, required=True)
    reg.add_argument("--name")
    reg.add_argument("-p", "--public-server", help="host:port for clients")
    reg.add_argument("-v", "--private-server", help="host:port for replication")
    reg.add_argument("--rack")
    reg.add_argument(
        "--secret-file",
        help="the SPU's secret: read from this file, or made and written there (mode 0600) "
        "when it does not exist; without it a new secret is printed once",
    )
    unreg = _client(ssub, "unregister", admin_cmds.spu_unregister, "remove a custom SPU")
    unreg.add_argument("--id", type=int)
    unreg.add_argument("--name")
    _client(ssub, "list", admin_cmds.spu_list, "list SPUs", output=True)

    spg = csub.add_parser("spg", help="SPU groups (managed SPUs)")
    gsub = spg.add_subparsers(dest="spg_command", required=True)
    create = _client(gsub, "create", admin_cmds.spg_create, "create an SPU group")
    create.add_argument("name")
    create.add_argument("--replicas", type=int, default=1)
    create.add_argument("--min-id", type=int, default=0)
    create.add_argument("--rack")
    create.add_argument("--storage-size", help="volume size, e.g. 20Gi")
    delete = _client(gsub, "delete", admin_cmds.spg_delete, "delete an SPU group")
    delete.add_argument("name")
    _client(gsub, "list", admin_cmds.spg_list, "list SPU groups", output=True)


def _topic_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    topic = sub.add_parser("topic", help="create, list, describe, delete topics, add partitions")
    tsub = topic.add_subparsers(dest="topic_command", required=True)
    create = _client(tsub, "create", admin_cmds.topic_create, "create a topic")
    create.add_argument("name")
    create.add_argument("-p", "--partitions", type=int, help="default 1")
    create.add_argument("-r", "--replication", type=int, help="default 1")
    create.add_argument(
        "-f",
        "--replica-assignment",
        help="manual assignment file (JSON/YAML); sets partitions and replication itself",
    )
    create.add_argument(
        "--retention-time",
        help="e.g. 7d, 12h, 3600; with a tier: how long the tier keeps history",
    )
    create.add_argument(
        "--tier",
        metavar="URL",
        help="directory or fsspec URL sealed segments are copied to as Parquet "
        "(default: the cluster's tier root, if it has one)",
    )
    create.add_argument(
        "--local-retention",
        metavar="DURATION",
        help="how long segments stay on the SPUs once the tier holds them (e.g. 1h)",
    )
    create.add_argument("--segment-size", help="e.g. 1Gi, 500Mi")
    create.add_argument("--max-partition-size", help="e.g. 10Gi")
    create.add_argument("--compression-type", choices=("any", "none", "lz4", "zstd"))
    create.add_argument("--min-in-sync-replicas", type=int)
    create.add_argument("--ignore-rack-assignment", action="store_true")
    create.add_argument("--dry-run", action="store_true", help="validate only")
    create.add_argument(
        "--allow-missing-spus",
        action="store_true",
        help="create it even with fewer SPUs than it needs; unusable until they join",
    )
    create.add_argument(
        "--schema",
        metavar="FILE",
        help="a typed topic: its columns from a JSON description "
        '([{"name": "id", "type": "int64", "nullable": false}, ...]) or a Parquet/Arrow file',
    )
    create.add_argument(
        "--table",
        choices=("delta",),
        help="also commit every tiered Parquet file to a Delta table at the tier's root",
    )
    upd = _client(
        tsub,
        "update-schema",
        admin_cmds.topic_update_schema,
        "evolve a typed topic's schema: add nullable columns (a new version)",
    )
    upd.add_argument("name")
    upd.add_argument("--schema", metavar="FILE", required=True, help="the new columns, as create")
    _client(tsub, "list", admin_cmds.topic_list, "list topics", output=True)
    desc = _client(tsub, "describe", admin_cmds.topic_describe, "show a topic", output=True)
    desc.add_argument("name")
    delete = _client(tsub, "delete", admin_cmds.topic_delete, "delete topics")
    delete.add_argument("names", nargs="+", metavar="name")
    grow = _client(
        tsub,
        "add-partition",
        admin_cmds.topic_add_partition,
        "add partitions to a topic (never fewer)",
        output=True,
    )
    grow.add_argument("name", metavar="topic")
    grow.add_argument(
        "-c", "--count", type=int, default=1, help="number of partitions to add (default 1)"
    )

    part = sub.add_parser("partition", help="partitions")
    psub = part.add_subparsers(dest="partition_command", required=True)
    plist = _client(
        psub,
        "list",
        admin_cmds.partition_list,
        "list partitions: leader, replicas, LEO, HW, LRS",
        output=True,
    )
    plist.add_argument("topic", nargs="?")
    elect = _client(
        psub,
        "elect-preferred",
        admin_cmds.partition_elect_preferred,
        "move leadership back to each partition's preferred (first) replica",
        output=True,
    )
    elect.add_argument("--topic", help="only this topic's partitions (default: all)")


def _data_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    prod = _client(sub, "produce", data_cmds.produce, "send records from stdin or files")
    prod.add_argument("topic")
    prod.add_argument("--key-separator", help="split each line into key and value at this")
    prod.add_argument("--key", help="the key of every record")
    prod.add_argument("-f", "--file", dest="files", action="append", help="send this file's lines")
    prod.add_argument("--raw", action="store_true", help="the whole input is one record")
    prod.add_argument("-p", "--partition", type=int, help="send to this partition")
    prod.add_argument("--compression", choices=("none", "lz4", "zstd"))
    prod.add_argument(
        "--acks",
        choices=("none", "leader", "all"),
        help="leader (default), all (in-sync replicas) or none",
    )
    prod.add_argument(
        "--isolation",
        help="Fluvio's name for the acknowledgement: read_committed waits for the in-sync "
        "replicas (--acks all), read_uncommitted for the leader (--acks leader)",
    )
    prod.add_argument(
        "--delivery-semantic",
        choices=("at-least-once", "at-most-once"),
        default="at-least-once",
        help="at-least-once (default): retry a failed send; at-most-once: never resend "
        "(a failed record is lost, never duplicated)",
    )
    prod.add_argument(
        "--linger",
        type=duration_arg("--linger"),
        help="how long a batch waits for more records, e.g. 150ms, 1s (default 5ms)",
    )
    prod.add_argument(
        "--batch-size", type=size_arg("--batch-size"), help="bytes per batch, e.g. 16Ki, 1MB"
    )
    prod.add_argument(
        "--max-request-size",
        type=size_arg("--max-request-size"),
        help="largest produce request, e.g. 8Mi, 100MB (default 8Mi)",
    )
    prod.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on files (default: when stderr is a terminal)",
    )
    prod.add_argument("-v", "--verbose", action="store_true", help="print each offset")

    cons = _client(sub, "consume", data_cmds.consume, "print records of a topic")
    cons.add_argument("topic", nargs="?", help="the topic (optional with -g and --pattern)")
    cons.add_argument(
        "-p", "--partition", type=int, action="append", help="partition (repeatable; default: all)"
    )
    cons.add_argument("-B", "--beginning", action="store_true", help="from the first record")
    cons.add_argument(
        "-H",
        "--head",
        type=_count,
        metavar="N",
        help="from N records after the start of the log (per partition)",
    )
    cons.add_argument("--start", type=_count, help="from this absolute offset")
    cons.add_argument(
        "--end",
        type=_count,
        help="stop after this offset, inclusive (each partition read)",
    )
    cons.add_argument("-T", "--tail", type=_count, help="the last N records, then new ones")
    cons.add_argument(
        "-b",
        "--maxbytes",
        dest="max_bytes",
        type=size_arg("-b/--maxbytes"),
        help="bytes fetched at a time, e.g. 64Ki, 1MB (default 1Mi; at least one batch)",
    )
    cons.add_argument(
        "-d",
        "--disable-continuous",
        action="store_true",
        help="stop at the end instead of waiting for new records",
    )
    cons.add_argument("-n", "--max-records", type=int, help="stop after N records")
    cons.add_argument(
        "-g",
        "--group",
        help="read as a member of this consumer group (its partitions, from its committed "
        "offsets; -B: earliest for partitions without one); commits as it goes",
    )
    cons.add_argument(
        "--pattern",
        help="with -g: also every topic this regular expression matches whole, including "
        "topics created later",
    )
    cons.add_check(_consume_needs_a_topic)
    cons.add_argument(
        "--isolation", default="read_committed", help="read_committed (default) or read_uncommitted"
    )
    cons.add_argument(
        "--skip-corrupt-frames",
        action="store_true",
        help="skip a batch found damaged on disk (a warning names its offsets) instead of "
        "stopping with an error",
    )
    cons.add_argument("-k", "--key-value", action="store_true", help="print [key] value")
    cons.add_argument(
        "-F",
        "--format",
        help="e.g. '{{offset}} {{key}} {{value}}'; {{timestamp}} is microseconds since the "
        "epoch, {{time}} the same instant as RFC 3339 UTC with milliseconds, as Fluvio's",
    )
    cons.add_argument(
        "-O",
        "--output",
        choices=("text", "json"),
        default="text",
        help="text (default) or JSON lines (timestamp: microseconds since the epoch)",
    )


def _count(text: str) -> int:
    """An argparse ``type=`` for a whole number >= 0 (an offset or a record count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _profile_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    profile = sub.add_parser("profile", help="the clusters this client knows; which one it uses")
    psub = profile.add_subparsers(dest="profile_command", required=True)
    plist = psub.add_parser("list", help="list profiles (* = current)", parents=[_output_parent()])
    plist.set_defaults(local_handler=profile_cmds.profile_list)
    current = psub.add_parser("current", help="print the current profile's name")
    current.set_defaults(local_handler=profile_cmds.profile_current)
    switch = psub.add_parser("switch", help="use this profile from now on")
    switch.add_argument("name", metavar="profile_name")
    switch.set_defaults(local_handler=profile_cmds.profile_switch)
    delete = psub.add_parser("delete", help="forget a profile")
    delete.add_argument("name", metavar="profile_name")
    delete.set_defaults(local_handler=profile_cmds.profile_delete)
    add = psub.add_parser("add", help="add a profile for a cluster's SC and make it current")
    add.add_argument("name", metavar="profile_name")
    add.add_argument("endpoint", help="the SC's public host:port")
    add.add_argument("--data-dir", help="the cluster's data directory, if it is local")
    add.add_argument("--token", help="the client token for a cluster with auth on")
    add.set_defaults(local_handler=profile_cmds.profile_add)


def _token_parsers(sub: argparse._SubParsersAction[CommandParser]) -> None:
    token = sub.add_parser("token", help="client tokens of a cluster with auth on")
    tsub = token.add_subparsers(dest="token_command", required=True)
    create = tsub.add_parser(
        "create",
        help="print a token signed with the cluster key",
        description="Print a client token: who (--principal) may do what (--grant "
        "PATTERN=PERMS, PERMS of produce, consume, admin) on the topics PATTERN matches "
        "(a glob: orders, orders-*, *). Admin on '*' is cluster admin.",
    )
    create.add_argument("--principal", required=True, help="the name the token is for")
    create.add_argument(
        "--grant",
        action="append",
        required=True,
        metavar="PATTERN=PERMS",
        help="e.g. 'orders-*=produce,consume' (repeatable)",
    )
    create.add_argument(
        "--expires", type=duration_arg("--expires"), help="lifetime, e.g. 12h (default: none)"
    )
    create.add_argument("--key-file", help="the cluster key (default: the local cluster's)")
    create.add_argument("--data-dir", help="the local cluster's data directory")
    create.set_defaults(local_handler=token_cmds.token_create)


def _version() -> str:
    """``fluvio --version``: this package's version, as installed (or from the source)."""
    try:
        version = importlib.metadata.version("spark-stream")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown (not installed)"
    python = ".".join(map(str, sys.version_info[:3]))
    return f"fluvio (spark-stream) {version}, Python {python}"


def _consume_needs_a_topic(args: argparse.Namespace) -> str | None:
    if args.pattern is not None and args.group is None:
        return "--pattern needs -g GROUP (the SC resolves it for the group)"
    if args.topic is None and args.pattern is None:
        return "the following arguments are required: topic (or -g GROUP --pattern REGEX)"
    return None


def build_parser() -> argparse.ArgumentParser:
    """The whole ``fluvio`` parser."""
    parser = CommandParser(
        prog="fluvio", description="Spark-native streaming storage in the Fluvio architecture"
    )
    parser.add_argument(
        "--endpoint",
        help="SC public address host:port (default: $FLUVIO_ENDPOINT, else the profile)",
    )
    parser.add_argument(
        "--ca-file",
        help="connect over TLS, trusting this CA (PEM); default: the profile's TLS",
    )
    # Not --tls-*: `cluster start --tls` would read as an ambiguous abbreviation of them.
    parser.add_argument("--client-cert", help="client certificate (PEM) for mutual TLS")
    parser.add_argument("--client-key", help="private key (PEM) of --client-cert")
    parser.add_argument(
        "--timeout",
        dest="connect_timeout",
        type=duration_arg("--timeout"),
        default=10.0,
        help="how long to wait for the cluster, e.g. 10s, 500ms (default 10s)",
    )
    parser.add_argument(
        "--token",
        help="client token for a cluster with auth on (default: $FLUVIO_TOKEN, else the "
        "profile's token)",
    )
    parser.add_argument("--log-level", default=os.environ.get("FLUVIO_LOG_LEVEL", "WARNING"))
    parser.add_argument("-V", "--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)
    _cluster_parsers(sub)
    _profile_parsers(sub)
    _token_parsers(sub)
    _topic_parsers(sub)
    _data_parsers(sub)
    group_cmds.add_parsers(sub, _client)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=str(args.log_level).upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        local = getattr(args, "local_handler", None)
        if local is not None:
            return int(local(args))
        endpoint = resolve_endpoint(args.endpoint, what="--endpoint")
        tls = None
        if args.ca_file or args.client_cert or args.client_key:
            tls = TlsConfig(ca=args.ca_file, cert=args.client_cert, key=args.client_key)
        with Fluvio.connect(
            endpoint, timeout=args.connect_timeout, tls=tls, token=args.token
        ) as fluvio:
            return int(args.client_handler(args, fluvio))
    except FluvioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:  # files named on the command line, the terminal
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130

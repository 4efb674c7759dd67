"""``python -m sc`` (console script ``fluvio-sc``): run one Streaming Controller.

Settings come from the packaged ``sc.yaml`` with ``FLUVIO_SC_*`` overrides (see
``spark_stream.config``; the files read are logged at start); the flags below override
both. Managed SPUs run the command of ``--spu-command`` or ``FLUVIO_SC_SPU_COMMAND`` (a
shell-quoted argv template).
SIGTERM or SIGINT stops the SC cleanly (exit 0), during its start too; a failed start
exits 1 with an ERROR log line saying what failed. Redis is checked first: the SC
retries an unreachable Redis for ``redis_start_timeout_s`` (``--redis-start-timeout``),
then exits naming its URL, so a supervisor notices instead of waiting on a silent SC; it
then checks that Redis keeps its data (``sc.kv.persistence``: a warning, or exit 2 with
``require_redis_persistence``). A store that loses its data while the SC runs makes the
SC exit 1 (managed SPUs keep running); started again, it rebuilds from the SPUs.
With ``--ready-file`` the SC writes ``{"pid", "public_port", "private_port",
"metrics_url"}`` as JSON once both servers listen, so a supervisor can use port 0.
``--metrics-port`` serves Prometheus metrics (``sc.metrics``); off by default.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import gc
import io
import json
import logging
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from sc.app import ScApp
from sc.gc_policy import FreezeSurvivors
from sc.kv import RedisKvStore
from sc.kv.persistence import check_persistence
from sc.settings import ScSettings
from spark_stream.config import load_settings, settings_files
from spark_stream.errors import FluvioError, InvalidConfigError, KvUnavailableError
from spark_stream.net.budget import tune_heap

__all__ = ["main", "parse_args"]

log = logging.getLogger("sc")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="fluvio-sc", description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="the KV store, redis://host:port/db")
    parser.add_argument("--host", help="address both servers bind to")
    parser.add_argument("--public-port", type=int, help="clients and admin (0: any free)")
    parser.add_argument("--private-port", type=int, help="SPU connections (0: any free)")
    parser.add_argument("--key-prefix", help="prefix of every Redis key")
    parser.add_argument(
        "--heartbeat-timeout",
        type=float,
        dest="heartbeat_timeout_s",
        help="seconds of SPU silence before it is Offline",
    )
    parser.add_argument("--data-dir", help="where managed SPUs keep their data")
    parser.add_argument("--tier-root", help="default tier of new topics ({root}/{topic})")
    parser.add_argument(
        "--redis-start-timeout",
        type=float,
        dest="redis_start_timeout_s",
        help="seconds to retry an unreachable Redis at start before exiting",
    )
    parser.add_argument(
        "--spu-command",
        default=os.environ.get("FLUVIO_SC_SPU_COMMAND"),
        help="argv template of a managed SPU (placeholders: {spu_id}...)",
    )
    parser.add_argument(
        "--metrics-port", type=int, help="serve Prometheus metrics here (0: any free port)"
    )
    parser.add_argument(
        "--auth-key-file", help="check client tokens signed with this key (default: off)"
    )
    parser.add_argument("--ready-file", type=Path, help="write ports as JSON here once up")
    parser.add_argument("--log-level", default=os.environ.get("FLUVIO_SC_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = (
        "redis_url",
        "host",
        "public_port",
        "private_port",
        "key_prefix",
        "heartbeat_timeout_s",
        "data_dir",
        "tier_root",
        "redis_start_timeout_s",
        "metrics_port",
        "auth_key_file",
    )
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


async def _check_redis(settings: ScSettings) -> None:
    """Wait until Redis answers, retrying (with backoff) for ``redis_start_timeout_s``.

    A store of its own, so the retry bound is the start's and not the running SC's
    (which rides out a Redis restart for longer).

    Raises:
        KvUnavailableError: Redis did not answer in time; the message names its URL.
        InvalidConfigError: the URL is not a Redis URL.
    """
    url, timeout = settings.redis_url, settings.redis_start_timeout_s
    log.info("sc starting: checking redis at %s (up to %ss)", url, timeout)
    try:
        probe = RedisKvStore(url, prefix=settings.key_prefix, reconnect_timeout=timeout)
    except ValueError as exc:
        raise InvalidConfigError(f"redis_url: {url!r}: {exc}") from exc
    try:
        await probe.revision()
    except KvUnavailableError as exc:
        cause = exc.__cause__ or exc
        raise KvUnavailableError(
            f"redis at {url} is unreachable (retried for up to {timeout}s): {cause}"
        ) from exc
    except RedisError as exc:  # something answered, but not as Redis does
        raise KvUnavailableError(f"redis at {url} is not usable: {exc}") from exc
    finally:
        await probe.close()
    try:
        problem = await check_persistence(url)
    except RedisError as exc:
        raise KvUnavailableError(f"redis at {url} is not usable: {exc}") from exc
    if problem is None:
        log.info("redis at %s persists its data", url)
    elif settings.require_redis_persistence:
        raise InvalidConfigError(
            f"redis at {url} does not keep its data: {problem}; turn on its append-only "
            "file (appendonly yes, appendfsync everysec) or unset require_redis_persistence"
        )
    else:
        log.warning(
            "redis at %s does not keep its data: %s; losing it loses consumer-group "
            "offsets and SPU groups (topics and partitions are rebuilt from the SPUs); "
            "turn on appendonly yes with appendfsync everysec",
            url,
            problem,
        )


async def _start(app: ScApp, settings: ScSettings) -> None:
    await _check_redis(settings)
    await app.start()


async def _run(settings: ScSettings, args: argparse.Namespace) -> int:
    command = shlex.split(args.spu_command) if args.spu_command else None
    try:
        app = ScApp(settings, spu_command=command)
    except ValueError as exc:  # e.g. a redis_url redis-py cannot parse
        log.error("bad configuration error=%s", exc)
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR2, _dump_tasks)
    # A signal during the start ends it (the start cleans up after itself) instead of
    # waiting for the start's own bounds.
    starting = loop.create_task(_start(app, settings), name="sc-start")
    stopping = loop.create_task(stop.wait(), name="sc-stop-signal")
    await asyncio.wait((starting, stopping), return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError, FluvioError, OSError):
            await starting
        log.info("sc stopped on signal during start")
        return 0
    try:
        starting.result()
    except InvalidConfigError as exc:
        stopping.cancel()
        log.error("bad configuration error=%s", exc)
        return 2
    except (FluvioError, OSError) as exc:
        stopping.cancel()
        log.error("sc failed to start: %s", exc)
        return 1
    # Everything alive now (modules, settings, the loaded mirror) leaves the collector's
    # generations, and so does whatever survives a later full collection (sc.gc_policy):
    # a full collection then scans only what is new. Without it full collections paused
    # the loop 25-125 ms with 1,000 group members (bench/groups.py heartbeats).
    gc_policy = FreezeSurvivors()
    gc_policy.install()
    log.info("sc started: %d objects frozen out of the collector", gc.get_freeze_count())
    if args.ready_file is not None:
        ready = {
            "pid": os.getpid(),
            "public_port": app.public_port,
            "private_port": app.private_port,
            "metrics_url": app.metrics_url,
        }
        tmp = args.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(ready))
        tmp.replace(args.ready_file)
    lost = loop.create_task(app.lost.wait(), name="sc-store-lost")
    await asyncio.wait((stopping, lost), return_when=asyncio.FIRST_COMPLETED)
    if not stopping.done():
        stopping.cancel()
        log.error(
            "sc stopping: the KV store at %s lost its data; start the SC again to rebuild "
            "topics and partitions from what the SPUs hold (managed SPUs keep running)",
            settings.redis_url,
        )
        await app.stop(keep_spus=True)
        return 1
    lost.cancel()
    log.info("sc stopping on signal")
    await app.stop()
    return 0


def _dump_tasks() -> None:
    """SIGUSR2: log the stack of every asyncio task (diagnosing a stuck SC)."""
    for task in asyncio.all_tasks():
        out = io.StringIO()
        task.print_stack(file=out)
        awaited: Any = task.get_coro()
        while awaited is not None:  # the await chain, through async generators too
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
            if frame is not None:
                out.write(f"  awaiting in {frame.f_code.co_filename}:{frame.f_lineno}\n")
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
        log.warning("task %s\n%s", task.get_name(), out.getvalue())


def main(argv: list[str] | None = None) -> int:
    """Run the SC until SIGTERM/SIGINT; return the exit code."""
    args = parse_args(argv)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` dumps every thread's stack
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    try:
        settings = load_settings(ScSettings, **_overrides(args))
    except FluvioError as exc:
        log.error("bad configuration error=%s", exc)
        return 2
    log.info("settings files: %s", ", ".join(settings_files(ScSettings)) or "none")
    tune_heap()  # frame bodies reuse heap memory; the request budget trims it when idle
    return asyncio.run(_run(settings, args))


if __name__ == "__main__":
    sys.exit(main())

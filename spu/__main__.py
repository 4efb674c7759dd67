"""``python -m spu`` (console script ``fluvio-spu``): run one SPU until SIGTERM or SIGINT.

Options override the packaged ``spu.yaml`` and ``FLUVIO_SPU_*`` variables (see
``spark_stream.config``; the files read are logged at start). Once both servers listen,
one line goes to stdout, so a launcher that asked for port 0 learns the ports::

    SPU_READY id=5001 public=127.0.0.1:40123 private=127.0.0.1:40124

(followed by ``metrics=http://127.0.0.1:40125/metrics`` when metrics are on).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any

from spark_stream.config import load_settings, settings_files
from spark_stream.errors import FluvioError
from spark_stream.net.budget import tune_heap
from spu.app import SpuApp
from spu.settings import SpuSettings

__all__ = ["main", "parse_args", "READY_PREFIX"]

log = logging.getLogger("spu")

READY_PREFIX = "SPU_READY"
log = logging.getLogger("spu")

_OPTIONS = {
    "id": int,
    "host": str,
    "public_port": int,
    "private_port": int,
    "sc_endpoint": str,
    "token": str,
    "data_dir": str,
    "heartbeat_interval_s": float,
    "replica_max_lag_ms": int,
    "max_batch_bytes": int,
    "frame_validation": str,
    "metrics_port": int,
    "auth_key_file": str,
}


def parse_args(argv: list[str] | None = None) -> tuple[dict[str, Any], str]:
    """Settings overrides from the command line, and the log level."""
    parser = argparse.ArgumentParser(prog="fluvio-spu", description=__doc__.splitlines()[0])
    for name, kind in _OPTIONS.items():
        flag = "--" + name.replace("_", "-")
        parser.add_argument(
            flag,
            dest=name,
            type=kind,
            default=None,
            help=SpuSettings.model_fields[name].description,
        )
    parser.add_argument("--sc", dest="sc_endpoint", type=str, help="alias of --sc-endpoint")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = vars(parser.parse_args(argv))
    level = args.pop("log_level")
    return {k: v for k, v in args.items() if v is not None}, level


async def _serve(settings: SpuSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)  # before the ready line: a stop may follow it
    app = SpuApp(settings)
    await app.start()
    metrics = f" metrics={app.metrics_url}" if app.metrics_url else ""
    print(
        f"{READY_PREFIX} id={settings.id} public={settings.host}:{app.public_port} "
        f"private={settings.host}:{app.private_port}{metrics}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
        await app.stop()


def main(argv: list[str] | None = None) -> int:
    """Run an SPU; returns the process exit status."""
    overrides, level = parse_args(argv)
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        settings = load_settings(SpuSettings, **overrides)
        log.info("settings files: %s", ", ".join(settings_files(SpuSettings)) or "none")
        tune_heap()  # frame bodies reuse heap memory; the request budget trims it when idle
        asyncio.run(_serve(settings))
    except FluvioError as exc:
        log.error("spu failed to start: %s: %s", type(exc).__name__, exc)
        return 2
    except OSError as exc:  # e.g. the port is taken, the data dir is not writable
        log.error("spu failed to start: %s", exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""SPU groups on the SC process: scale up/down starts and stops processes by pid."""

from __future__ import annotations

import contextlib
import sys
import uuid

import psutil
import pytest

from spark_stream.client.admin import AdminClient
from tests.harness.processes import ScChild
from tests.polling import until
from tests.sc.sim_spu import run

pytestmark = pytest.mark.integration

SLEEPER = "import time; time.sleep(120)"


def processes(marker: str) -> dict[int, int]:
    """SPU id -> pid of the live stand-in SPU processes carrying ``marker``."""
    found = {}
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if marker in cmd and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found[int(cmd[cmd.index(marker) + 1])] = proc.pid
    return found


def kill_all(marker: str) -> None:
    for pid in processes(marker).values():
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def test_spu_group_scale_up_and_down_runs_the_provisioner_command(
    sc_factory: type[ScChild],
) -> None:
    marker = f"sim-spu-{uuid.uuid4()}"
    sc = sc_factory(spu_command=[sys.executable, "-c", SLEEPER, marker, "{spu_id}"]).start()

    async def ids(admin: AdminClient) -> list[int]:
        return [s.spu_id for s in await admin.list_spus()]

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port) as admin:
            await admin.create_spu_group("main", replicas=2, min_id=10)
            await until(lambda: sorted(processes(marker)) == [10, 11], what="2 SPUs started")
            assert await ids(admin) == [10, 11]
            first = processes(marker)
            await admin.scale_spu_group("main", 3)
            await until(lambda: sorted(processes(marker)) == [10, 11, 12], what="scaled up")
            assert await ids(admin) == [10, 11, 12]
            assert {k: v for k, v in processes(marker).items() if k < 12} == first
            await admin.scale_spu_group("main", 1)
            await until(lambda: sorted(processes(marker)) == [10], what="highest ids stopped")
            assert await ids(admin) == [10]
            assert processes(marker)[10] == first[10]

    try:
        run(body())
        # SIGKILL: the SPU lives on; the next SC adopts it instead of starting another.
        survivor = processes(marker)[10]
        sc.kill()
        assert processes(marker) == {10: survivor}
        sc.start()

        async def after_restart() -> None:
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                await until(lambda: "spu process adopted spu=10" in sc.log(), what="adopted")
                assert processes(marker) == {10: survivor}
                await admin.delete_spu_group("main")
                await until(lambda: processes(marker) == {}, what="group's SPUs stopped")
                assert await ids(admin) == []

        run(after_restart())
    finally:
        sc.stop()
        kill_all(marker)
    assert processes(marker) == {}


def test_a_clean_sc_stop_stops_its_managed_spus(sc_factory: type[ScChild]) -> None:
    marker = f"sim-spu-{uuid.uuid4()}"
    sc = sc_factory(spu_command=[sys.executable, "-c", SLEEPER, marker, "{spu_id}"]).start()
    try:

        async def body() -> None:
            async with AdminClient("127.0.0.1", sc.public_port) as admin:
                await admin.create_spu_group("g", replicas=2, min_id=1)
                await until(lambda: sorted(processes(marker)) == [1, 2], what="started")

        run(body())
        assert sc.stop() == 0
        assert processes(marker) == {}
    finally:
        kill_all(marker)

"""``LocalProcessProvisioner`` with a stand-in SPU command: start, adopt, stop by pid."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import psutil
import pytest

from sc.actions import ProvisionSpu, TerminateSpu
from sc.provisioner import LocalProcessProvisioner
from spark_stream.errors import ProvisionError
from spark_stream.models import SpuTemplate
from spark_stream.spu_identity import SECRET_FILE, read_secret_file, secret_verifier
from spark_stream.supervision import PidRecord
from tests.polling import until
from tests.sc.sim_spu import run

pytestmark = pytest.mark.integration

SLEEPER = "import sys, time; time.sleep(120)"


def command(marker: str) -> list[str]:
    return [sys.executable, "-c", SLEEPER, marker, "{spu_id}", "{sc_endpoint}"]


class Verifiers:
    """Records the verifiers the provisioner hands the SC, as ``record_secret``."""

    def __init__(self) -> None:
        self.recorded: dict[str, str] = {}

    async def __call__(self, name: str, verifier: str) -> None:
        self.recorded[name] = verifier


def make(
    tmp_path: Path, marker: str, verifiers: Verifiers | None = None, **kwargs: object
) -> LocalProcessProvisioner:
    return LocalProcessProvisioner(
        command(marker),
        tmp_path,
        sc_endpoint="127.0.0.1:9",
        record_secret=verifiers,
        stop_timeout=5.0,
        **kwargs,
    )  # type: ignore[arg-type]


def processes(marker: str) -> dict[int, psutil.Process]:
    found = {}
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if marker in cmd:
            found[int(cmd[cmd.index(marker) + 1])] = proc
    return found


async def exec_done(marker: str, ids: list[int]) -> dict[int, psutil.Process]:
    """The processes of ``ids`` once each shows its command line.

    ``spawn`` returns as soon as exec began; the kernel fills /proc/{pid}/cmdline a moment
    later, so a search by command line right after a start may miss the newest process.
    """
    await until(lambda: sorted(processes(marker)) == ids, what=f"SPUs {ids} running")
    return processes(marker)


def provision(spu_id: int, template: SpuTemplate | None = None) -> ProvisionSpu:
    return ProvisionSpu(spu_id, f"g-{spu_id}", "g", template or SpuTemplate())


def test_start_is_idempotent_and_stop_terminates_by_pid(tmp_path: Path) -> None:
    marker = f"spu-test-{uuid.uuid4()}"

    async def body() -> None:
        verifiers = Verifiers()
        prov = make(tmp_path, marker, verifiers)
        try:
            await prov.provision(provision(1, SpuTemplate(public_port=7000)))
            await prov.provision(provision(1))
            await prov.provision(provision(2))
            running = prov.running()
            assert sorted(running) == [1, 2]
            procs = await exec_done(marker, [1, 2])
            assert {i: p.pid for i, p in procs.items()} == running
            env = procs[1].environ()
            assert env["FLUVIO_SPU_ID"] == "1" and "FLUVIO_SPU_SECRET" not in env
            # each SPU its own secret, in a 0600 file; the SC is given only its verifier
            secrets = {i: tmp_path / f"spu-{i}" / SECRET_FILE for i in (1, 2)}
            assert all(path.stat().st_mode & 0o777 == 0o600 for path in secrets.values())
            one, two = (read_secret_file(secrets[i]) for i in (1, 2))
            assert one != two
            assert verifiers.recorded == {
                "g-1": secret_verifier(one),
                "g-2": secret_verifier(two),
            }
            assert env["FLUVIO_SPU_PUBLIC_PORT"] == "7000"
            assert env["FLUVIO_SPU_DATA_DIR"] == str(tmp_path / "spu-1")
            assert procs[1].cmdline()[-1] == "127.0.0.1:9"
            await prov.terminate(TerminateSpu(2, "g-2", "g"))
            assert sorted(prov.running()) == [1]
            assert (
                not psutil.pid_exists(running[2])
                or psutil.Process(running[2]).status() == psutil.STATUS_ZOMBIE
            )
            assert not (tmp_path / "spu-2" / "spu.pid").exists()
            await prov.terminate(TerminateSpu(2, "g-2", "g"))  # already gone: no error
        finally:
            await prov.close()
        assert processes(marker) == {}

    run(body())


def test_a_new_provisioner_adopts_running_spus_instead_of_duplicating(tmp_path: Path) -> None:
    marker = f"spu-test-{uuid.uuid4()}"

    async def body() -> None:
        first = make(tmp_path, marker, stop_on_close=False)
        second = make(tmp_path, marker)
        try:
            await first.provision(provision(5))
            await first.close()  # the SC went away; the SPU lives on
            pid = first.running()[5]
            await second.ensure([provision(5), provision(6)])
            assert second.running()[5] == pid
            await exec_done(marker, [5, 6])
        finally:
            await second.close()
            for proc in processes(marker).values():
                proc.kill()
        assert processes(marker) == {}

    run(body())


def test_a_recycled_pid_is_not_mistaken_for_an_spu(tmp_path: Path) -> None:
    me = psutil.Process()
    impostor = PidRecord(me.pid, me.create_time() - 1000)
    assert not impostor.alive()
    assert PidRecord(me.pid, me.create_time()).alive()
    folder = tmp_path / "spu-3"
    folder.mkdir()
    (folder / "spu.pid").write_text(f"{me.pid} {me.create_time() - 1000!r}\n")
    prov = make(tmp_path, "unused")
    assert prov._find(3) is None


def test_a_command_that_cannot_run_raises_provision_error(tmp_path: Path) -> None:
    prov = LocalProcessProvisioner(["/nonexistent/spu"], tmp_path, sc_endpoint="x:1")
    with pytest.raises(ProvisionError, match="nonexistent"):
        run(prov.provision(provision(1)))

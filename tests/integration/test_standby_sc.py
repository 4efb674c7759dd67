"""A standby SC: it takes over when the active one dies or hangs, and the old one is fenced.

Real processes: one Redis, two SCs (``python -m sc``) sharing it, custom SPUs given both
SCs' private addresses, a client given both public addresses.

- SIGKILL the active SC while a producer sends with ``acks=all``: the standby becomes
  active (the time is printed), the SPUs reconnect to it (a topic created afterwards
  gets its leaders), and every acknowledged record reads back.
- SIGSTOP the active SC past its lease, let the standby take over, SIGCONT: the woken SC
  writes nothing after the takeover (every change in the Redis feed since carries the
  new token), its admin writes are refused, and it steps down to a standby naming the
  new active SC.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from pathlib import Path

import pytest
import redis

from spark_stream.client import Fluvio, Offset
from spark_stream.client.admin import AdminClient
from spark_stream.errors import ConnectionClosedError, FluvioError, NotActiveError
from spark_stream.local.redis_server import free_port
from spark_stream.net.sc_endpoints import ActiveSc, ScEndpoints, active_from
from spark_stream.spu_identity import new_secret
from tests.harness.processes import HOST, ScChild, SpuChild
from tests.integration.helpers import make_topic
from tests.polling import wait_until

pytestmark = pytest.mark.integration

#: A short lease, so the tests wait seconds, not the default 5 s.
LEASE_TTL = "2"
PREFIX = "fluvio"


def two_scs(redis_url: str, workdir: Path) -> tuple[ScChild, ScChild]:
    """The first SC started (active), then the second (a standby)."""
    args = ["--lease-ttl", LEASE_TTL]
    first = ScChild(redis_url, workdir / "sc-a", args=args).start()
    second = ScChild(redis_url, workdir / "sc-b", args=args).start()
    assert (first.role, second.role) == ("active", "standby")
    return first, second


def publics(*scs: ScChild) -> str:
    return ",".join(f"{HOST}:{sc.public_port}" for sc in scs)


def privates(*scs: ScChild) -> str:
    return ",".join(f"{HOST}:{sc.private_port}" for sc in scs)


def wait_active(sc: ScChild, timeout: float = 30.0) -> None:
    wait_until(lambda: "sc active: took the lease" in sc.log(), timeout, f"{sc.name} active")


def test_standby_takes_over_a_killed_sc_under_load(redis_url: str, tmp_path: Path) -> None:
    a, b = two_scs(redis_url, tmp_path)
    spus: list[SpuChild] = []
    try:
        start_spus((a, b), [5001, 5002], tmp_path, spus)
        with Fluvio.connect(publics(a, b), timeout=20) as fluvio:
            wait_spus_online(fluvio, 2)
            topic = make_topic(fluvio, partitions=2, replication=2)
            producer = fluvio.topic_producer(topic, acks="all", linger_ms=5)
            sent, acked = 0, set()

            def produce(count: int) -> None:
                nonlocal sent
                futures = []
                for _ in range(count):
                    futures.append((sent, producer.send(None, str(sent))))
                    sent += 1
                for value, future in futures:
                    with contextlib.suppress(FluvioError):
                        future.result(60)
                        acked.add(value)

            produce(200)
            killed = time.monotonic()
            a.kill(signal.SIGKILL)
            produce(200)  # the data plane does not need the SC
            wait_active(b)
            took_over = time.monotonic() - killed
            produce(200)
            # The SPUs reconnected to the new SC: a new topic gets its leaders.
            after = make_topic(fluvio, partitions=2, replication=2, timeout=60)
            spu_views = fluvio.admin().list_spus()
            states = [(s.spu_id, s.status.resolution.value) for s in spu_views]
            produce(200)
            producer.flush()
            read = set()
            for partition in range(2):
                stream = fluvio.partition_consumer(topic, partition).stream(
                    Offset.beginning(), stop_at_end=True
                )
                read.update(int(r.value) for r in stream)
            print(
                f"standby took over {took_over:.2f}s after the SIGKILL (lease ttl {LEASE_TTL}s); "
                f"records sent={sent} acknowledged={len(acked)} read back={len(read)}; "
                f"new topic {after} online; SPUs {states}"
            )
            assert acked <= read, f"acknowledged but lost: {sorted(acked - read)[:10]}"
            assert len(acked) == sent == 800
            assert took_over < 30
            assert all(s.status.is_online for s in spu_views)
            for spu in spus:  # connected once to each SC
                assert spu.log().count("connected to the SC spu=") >= 2, spu.log_tail()
            # The client followed the active SC.
            assert fluvio.core.sc.current.port == b.public_port
    finally:
        for spu in spus:
            spu.stop()
        b.stop()
        a.stop()


def start_spus(
    scs: tuple[ScChild, ...], ids: list[int], workdir: Path, started: list[SpuChild]
) -> None:
    """Register SPUs ``ids`` through whichever of ``scs`` is active and start each, given
    every SC's private address; each is added to ``started`` (for the caller to stop)."""
    registered = asyncio.run(_register(publics(*scs), ids))
    for spu_id, (ports, secret) in registered.items():
        spu = SpuChild(
            spu_id,
            privates(*scs),
            workdir / f"spu-{spu_id}",
            ports,
            {"heartbeat_interval_s": 0.5},
            secret,
        )
        started.append(spu.start())


def wait_spus_online(fluvio: Fluvio, count: int) -> None:
    wait_until(
        lambda: sum(s.status.is_online for s in fluvio.admin().list_spus()) == count,
        30,
        f"{count} SPUs online",
    )


async def _register(endpoints: str, ids: list[int]) -> dict[int, tuple[tuple[int, int], str]]:
    """Register custom SPUs (through whichever SC is active); their ports and secrets."""
    out = {}
    async with AdminClient(endpoints=ScEndpoints.parse(endpoints), timeout=10) as admin:
        for spu_id in ids:
            ports = (free_port(), free_port())
            secret = new_secret()
            await admin.register_spu(
                spu_id,
                secret=secret,
                publicEndpoint={"port": ports[0], "ingress": [{"hostname": HOST}]},
                privateEndpoint={"port": ports[1], "host": HOST},
            )
            out[spu_id] = (ports, secret)
    return out


def test_a_deposed_sc_that_wakes_up_writes_nothing_and_steps_down(
    redis_url: str, tmp_path: Path
) -> None:
    a, b = two_scs(redis_url, tmp_path)
    kv = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        make = asyncio.run(_create(publics(a, b), "before"))
        assert make == "before"
        assert a.signal(signal.SIGSTOP)
        wait_active(b)
        token = int(kv.get(f"{PREFIX}:lease:token") or 0)
        taken_at = int(kv.get(f"{PREFIX}:rev") or 0)
        assert token == 2
        asyncio.run(_create(publics(b), "by-b"))
        # A request already queued on the paused SC's socket: when it wakes it handles
        # it either still believing it is active (the write is fenced) or as the
        # standby it became; either way it is refused and nothing is stored.
        queued: list[BaseException] = []
        sender = threading.Thread(target=_queued_create, args=(publics(a), queued))
        sender.start()
        time.sleep(0.5)  # let the request reach the paused SC's socket
        assert a.signal(signal.SIGCONT)
        sender.join(60)
        assert queued and isinstance(queued[0], NotActiveError | ConnectionClosedError)
        refused = _refusal(publics(a), "by-a")
        wait_until(lambda: "sc stepping down" in a.log(), 30, "the old SC to step down")
        standby = _refusal(publics(a), "by-a-again")
        assert active_from(standby) == ActiveSc(
            f"{HOST}:{b.public_port}", f"{HOST}:{b.private_port}"
        )
        topics = set(kv.hkeys(f"{PREFIX}:o:Topic:rev"))
        assert topics == {"before", "by-b"}
        entries = kv.xrange(f"{PREFIX}:feed", min=f"{taken_at + 1}-0")
        fences = {fields.get("fence") for _, fields in entries}
        print(
            f"takeover at revision {taken_at} with token {token}; changes since: {len(entries)}, "
            f"their tokens {fences}; the queued request got: {queued[0]!r}; then: {refused}; "
            f"its own refused "
            f"writes: {a.log().count('superseded by')}"
        )
        assert entries and fences == {str(token)}
        assert a.alive  # stepped down, not crashed
    finally:
        a.signal(signal.SIGCONT)
        kv.close()
        b.stop()
        a.stop()


async def _create(endpoints: str, name: str, *, follow: bool = True) -> str:
    scs = ScEndpoints.parse(endpoints)
    async with AdminClient(endpoints=scs if follow else _no_follow(scs), timeout=10) as admin:
        await admin.create_topic(name, partitions=1, allow_missing_spus=True)
    return name


def _queued_create(endpoint: str, out: list[BaseException]) -> None:
    try:
        asyncio.run(_create(endpoint, "queued", follow=False))
    except FluvioError as exc:
        out.append(exc)


def _refusal(endpoint: str, name: str) -> NotActiveError:
    """The ``NotActiveError`` the SC at ``endpoint`` answers a topic creation with.

    A connection closed meanwhile (the SC stepping down rebinds its ports) is retried.
    """
    deadline = time.monotonic() + 30
    while True:
        try:
            asyncio.run(_create(endpoint, name, follow=False))
        except NotActiveError as exc:
            return exc
        except ConnectionClosedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # the ports are being rebound
        else:
            raise AssertionError(f"the SC at {endpoint} created {name}")


class _NoFollow(ScEndpoints):
    """Endpoints that never follow a standby (the test talks to one SC on purpose)."""

    def follow(self, error: BaseException) -> bool:
        return False


def _no_follow(scs: ScEndpoints) -> ScEndpoints:
    return _NoFollow(scs.all)

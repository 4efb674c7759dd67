"""Metadata watchers at scale: an SC process on Redis, 100 watches through a burst."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from spark_stream.client.admin import AdminClient
from tests.harness.processes import ScChild
from tests.polling import until
from tests.sc.sim_spu import run, sim_secret

pytestmark = pytest.mark.integration


def test_a_hundred_watchers_converge_after_a_burst(sc_factory: type[ScChild]) -> None:
    """A topic of 1,000 partitions created and another created and deleted while 100
    watches are open: every watcher's view ends equal to the SC's own listing."""
    sc = sc_factory().start()

    def key(part: dict[str, Any]) -> tuple[str, Any, Any, Any]:
        status = part["status"]
        return part["metadata"]["name"], status["resolution"], status.get("leader"), part["spec"]

    async def watch(admin: AdminClient, view: dict[str, dict[str, Any]]) -> None:
        async for update in admin.watch_metadata():
            if update.full:
                view.clear()
            for d in update.deleted:
                view.pop(f"{d['kind']}/{d['name']}", None)
            for kind, items in (("Topic", update.topics), ("Partition", update.partitions)):
                view.update({f"{kind}/{item['metadata']['name']}": item for item in items})

    async def body() -> None:
        async with AdminClient("127.0.0.1", sc.public_port, timeout=30) as admin:
            await admin.register_spu(1, secret=sim_secret(1))
            admins = [AdminClient("127.0.0.1", sc.public_port, timeout=30) for _ in range(100)]
            views: list[dict[str, dict[str, Any]]] = [{} for _ in admins]
            tasks = [asyncio.create_task(watch(a, v)) for a, v in zip(admins, views, strict=True)]
            try:
                await admin.create_topic("small", partitions=3)
                await admin.create_topic("big", partitions=1000)
                await admin.delete_topic("small")

                async def converged() -> bool:
                    # The SC's listing now (statuses may still settle meanwhile).
                    listed = await admin.list_partitions()
                    parts = sorted(key(p.to_dict()) for p in listed)
                    return len(parts) == 1000 and all(
                        sorted(key(d) for n, d in view.items() if n.startswith("Partition/"))
                        == parts
                        and {n for n in view if n.startswith("Topic/")} == {"Topic/big"}
                        for view in views
                    )

                await until(converged, within=120, what="every watcher sees the SC's view")
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                for a in admins:
                    await a.close()

    run(body(), timeout=180)

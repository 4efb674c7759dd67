"""The SPU's SC link: its endpoint setting, and a link to an SC on IPv6 loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.client.admin import AdminClient
from spark_stream.config import load_settings
from spark_stream.errors import InvalidConfigError
from spu.dispatcher import SpuDispatcher
from spu.sc_link import ScLink
from spu.settings import SpuSettings
from tests.sc.sim_spu import sim_secret


def link(tmp_path: Path, sc_endpoint: str) -> ScLink:
    settings = load_settings(
        SpuSettings, id=1, sc_endpoint=sc_endpoint, data_dir=str(tmp_path / "spu")
    )
    return ScLink(
        settings, SpuDispatcher(settings), public_port=1, private_port=2, secret=sim_secret(1)
    )


@pytest.mark.parametrize("endpoint", ["9004", "::1:9004", "sc:0", "sc"])
def test_a_bad_sc_endpoint_is_a_typed_error_naming_the_setting(
    tmp_path: Path, endpoint: str
) -> None:
    with pytest.raises(InvalidConfigError, match="^sc_endpoint must be 'host:port'"):
        link(tmp_path, endpoint)


def test_an_ipv6_sc_endpoint_loses_its_brackets(tmp_path: Path) -> None:
    sc_link = link(tmp_path, "[::1]:9004")
    assert sc_link.endpoints.current == ("::1", 9004)


def test_several_sc_endpoints_are_tried_in_order(tmp_path: Path) -> None:
    sc_link = link(tmp_path, "127.0.0.1:9004, [::1]:9104")
    assert sc_link.endpoints.all == (("127.0.0.1", 9004), ("::1", 9104))


@pytest.mark.integration
def test_links_to_an_sc_on_ipv6_loopback(tmp_path: Path) -> None:
    async def body() -> None:
        settings = load_settings(ScSettings, host="::1", public_port=0, private_port=0)
        sc = ScApp(settings, kv=MemoryKvStore())
        await sc.start()
        try:
            async with AdminClient("::1", sc.public_port) as admin:
                await admin.register_spu(1, secret=sim_secret(1))
            sc_link = link(tmp_path, f"[::1]:{sc.private_port}")
            sc_link.start()
            try:
                async with asyncio.timeout(10):
                    await sc_link.accepted.wait()
                assert sc_link.connections == 1
            finally:
                await sc_link.stop()
        finally:
            await sc.stop()

    asyncio.run(body())

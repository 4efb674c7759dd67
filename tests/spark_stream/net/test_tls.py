"""TLS on the transport: ``Server(tls=...)`` and ``Connection.open(tls=...)`` on loopback.

Real sockets and real certificates (``ensure_local_certs``); each refusal must arrive
typed and quickly (the bounds here only guard against hangs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_stream.errors import ConnectionClosedError, InvalidConfigError, TlsError
from spark_stream.local.certs import LocalCerts, ensure_local_certs
from spark_stream.net.connection import Connection
from spark_stream.net.server import ConnContext, Server
from spark_stream.net.tls import TlsConfig
from spark_stream.protocol import ApiKey, Request
from tests.polling import run_bounded as run

pytestmark = pytest.mark.integration

ECHO = ApiKey.CREATE_TOPIC
BIG = 3 << 20  # a tail past the receiver's own-buffer size, through TLS records


async def _echo(request: Request, ctx: ConnContext) -> Any:
    return dict(request.meta), bytes(request.tail)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> LocalCerts:
    return ensure_local_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCerts:
    """A second, unrelated CA: its certificates must be refused."""
    return ensure_local_certs(tmp_path_factory.mktemp("other"))


async def _round_trip(server_tls: TlsConfig, client_tls: TlsConfig | None) -> tuple[Any, Any]:
    async with Server({ECHO: _echo}, tls=server_tls.server_context()) as server:
        context = client_tls.client_context() if client_tls is not None else None
        async with await Connection.open("127.0.0.1", server.port, tls=context) as conn:
            meta, tail = await conn.request(ECHO, {"n": 1}, b"x" * BIG, timeout=20)
            return meta, bytes(tail)


def test_tls_round_trip_carries_a_large_tail(certs: LocalCerts) -> None:
    meta, tail = run(
        _round_trip(certs.server_config(mutual=False), certs.client_config(mutual=False))
    )
    assert meta == {"n": 1}
    assert tail == b"x" * BIG


def test_mutual_tls_round_trip(certs: LocalCerts) -> None:
    meta, _ = run(_round_trip(certs.server_config(mutual=True), certs.client_config(mutual=True)))
    assert meta == {"n": 1}


def test_plaintext_client_on_a_tls_port_gets_tls_error(certs: LocalCerts) -> None:
    with pytest.raises(TlsError, match="speaks TLS on this port"):
        run(_round_trip(certs.server_config(mutual=False), None), timeout=15)


def test_mtls_refuses_a_client_without_certificate(certs: LocalCerts) -> None:
    with pytest.raises(TlsError, match="requires a client certificate|CERTIFICATE_REQUIRED"):
        run(
            _round_trip(certs.server_config(mutual=True), certs.client_config(mutual=False)),
            timeout=15,
        )


def test_a_server_certificate_from_another_ca_is_refused(
    certs: LocalCerts, other_ca: LocalCerts
) -> None:
    with pytest.raises(TlsError, match="not trusted.*CERTIFICATE_VERIFY_FAILED"):
        run(
            _round_trip(certs.server_config(mutual=False), other_ca.client_config(mutual=False)),
            timeout=15,
        )


def test_a_client_certificate_from_another_ca_is_refused(
    certs: LocalCerts, other_ca: LocalCerts, caplog: pytest.LogCaptureFixture
) -> None:
    # TLS 1.3 ends the client's handshake before the server checks its certificate and
    # asyncio drops the server's alert: the client sees a reset (with a hint), the
    # server's log names the certificate problem.
    client = TlsConfig(
        ca=str(certs.ca), cert=str(other_ca.cert("client")), key=str(other_ca.key("client"))
    )
    with pytest.raises(
        (TlsError, ConnectionClosedError), match="refused this client's certificate|UNKNOWN_CA"
    ):
        run(_round_trip(certs.server_config(mutual=True), client), timeout=15)
    assert "the client's certificate is not signed by this server's CA" in caplog.text


def test_a_tls_client_on_a_plaintext_port_gets_tls_error(certs: LocalCerts) -> None:
    async def main() -> None:
        async with Server({ECHO: _echo}) as server:
            context = certs.client_config(mutual=False).client_context()
            await Connection.open("127.0.0.1", server.port, tls=context, timeout=10)

    with pytest.raises(TlsError, match="cannot connect to 127.0.0.1:\\d+ over TLS"):
        run(main(), timeout=15)


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.pem")
    with pytest.raises(InvalidConfigError, match="'ca' file .*nope.pem does not exist"):
        TlsConfig(ca=missing).client_context()
    with pytest.raises(InvalidConfigError, match="needs both 'cert' and 'key'"):
        TlsConfig(ca=missing).server_context()
    with pytest.raises(InvalidConfigError, match="require_client_cert needs 'ca'"):
        TlsConfig(cert=missing, key=missing, require_client_cert=True).server_context()


def test_tls_config_pickles() -> None:
    import pickle

    config = TlsConfig(ca="/a", cert="/b", key="/c", require_client_cert=True)
    assert pickle.loads(pickle.dumps(config)) == config


def test_local_certs_are_made_once(tmp_path: Path) -> None:
    first = ensure_local_certs(tmp_path)
    ca = first.ca.read_bytes()
    assert ensure_local_certs(tmp_path).ca.read_bytes() == ca
    assert first.key("server").stat().st_mode & 0o077 == 0
    assert first.client_p12.is_file()

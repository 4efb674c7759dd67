"""``TlsSocketTransport`` on loopback: bytes in order under back-pressure, flow control,
closing that flushes, abort, a peer that resets, both kinds of protocol.

Real sockets and real certificates (``ensure_local_certs``); the bounds only guard
against hangs.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import ssl
import struct

import pytest

from spark_stream.local.certs import LocalCerts, ensure_local_certs
from spark_stream.net._tls_transport import (
    TlsSocketTransport,
    handshake,
    open_tls_socket,
    wrap_tls,
)
from tests.polling import run_bounded as run
from tests.polling import until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> LocalCerts:
    return ensure_local_certs(tmp_path_factory.mktemp("tls"))


class Collector(asyncio.Protocol):
    """A plain protocol that keeps what it receives and records every callback."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.events: list[str] = []
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.events.append("made")

    def data_received(self, data: bytes) -> None:
        self.data += data

    def eof_received(self) -> bool | None:
        self.events.append("eof")
        return None

    def pause_writing(self) -> None:
        self.events.append("pause")

    def resume_writing(self) -> None:
        self.events.append("resume")

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append("lost")
        self.lost.set_result(exc)


class BufferedCollector(asyncio.BufferedProtocol, Collector):
    """The same, reading through ``get_buffer`` in small pieces (many calls per record)."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = bytearray(1000)

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.data += self.buffer[:nbytes]


async def _pair(
    certs: LocalCerts, server: asyncio.BaseProtocol, client: asyncio.BaseProtocol
) -> tuple[TlsSocketTransport, TlsSocketTransport]:
    """A server and a client transport connected over TLS on loopback."""
    loop = asyncio.get_running_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    server_ctx = certs.server_config(mutual=False).server_context()
    client_ctx = certs.client_config(mutual=False).client_context()
    with listener:
        connecting = asyncio.ensure_future(
            open_tls_socket("127.0.0.1", port, client_ctx, "127.0.0.1")
        )
        conn, _ = await loop.sock_accept(listener)
    server_sock = wrap_tls(conn, server_ctx)
    await handshake(server_sock)
    client_sock = await connecting
    return (
        TlsSocketTransport(loop, server_sock, server),
        TlsSocketTransport(loop, client_sock, client),
    )


@pytest.mark.parametrize("kind", [Collector, BufferedCollector])
def test_bytes_arrive_whole_and_in_order_through_back_pressure(
    certs: LocalCerts, kind: type[Collector]
) -> None:
    payload = os.urandom(24 << 20)

    async def main() -> None:
        server, client = kind(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        server_t.pause_reading()  # nothing is read: the client's writes must queue
        for i in range(0, len(payload), 3 << 20):
            client_t.write(memoryview(payload)[i : i + (3 << 20)])
            client_t.write(b"")  # an empty write is nothing
        assert client_t.get_write_buffer_size() > 0
        assert "pause" in client.events
        server_t.resume_reading()
        await until(lambda: len(server.data) >= len(payload))
        await until(lambda: client_t.get_write_buffer_size() == 0)
        assert hashlib.sha256(server.data).digest() == hashlib.sha256(payload).digest()
        assert client.events.count("pause") == client.events.count("resume") >= 1
        client_t.close()
        server_t.close()
        await asyncio.gather(client.lost, server.lost)

    run(main())


def test_a_queued_mutable_buffer_is_sent_as_it_was_when_written(certs: LocalCerts) -> None:
    async def main() -> None:
        server, client = Collector(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        server_t.pause_reading()
        chunk = os.urandom(1 << 20)
        filler = bytearray()
        while not client_t.get_write_buffer_size():  # until the socket is full
            assert len(filler) < 256 << 20
            client_t.write(chunk)
            filler += chunk
        scratch = bytearray(b"a" * 100_000)
        client_t.write(scratch)
        scratch[:] = b"b" * 100_000  # the caller reuses its buffer
        server_t.resume_reading()
        await until(lambda: len(server.data) >= len(filler) + 100_000)
        assert server.data[len(filler) :] == b"a" * 100_000
        client_t.abort()
        server_t.abort()

    run(main())


def test_close_flushes_what_is_queued_then_the_peer_sees_eof(certs: LocalCerts) -> None:
    payload = os.urandom(12 << 20)

    async def main() -> None:
        server, client = Collector(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        server_t.pause_reading()
        client_t.write(payload)
        client_t.close()
        assert client_t.is_closing()
        client_t.write(b"after close")  # dropped, as asyncio drops it
        server_t.resume_reading()
        assert await client.lost is None
        await until(lambda: "eof" in server.events)
        assert bytes(server.data) == payload
        assert await server.lost is None  # eof_received returned None: the transport closed
        assert client.events == ["made", "pause", "resume", "lost"]

    run(main())


def test_abort_drops_the_queue_and_reports_the_loss_once(certs: LocalCerts) -> None:
    async def main() -> None:
        server, client = Collector(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        server_t.pause_reading()
        client_t.write(os.urandom(16 << 20))
        assert client_t.get_write_buffer_size() > 0
        client_t.abort()
        client_t.abort()
        client_t.close()
        assert await client.lost is None
        await asyncio.sleep(0)  # a second loss would have been scheduled with the first
        assert client.events.count("lost") == 1
        assert client_t.get_write_buffer_size() == 0
        server_t.resume_reading()
        await asyncio.wait_for(server.lost, 10)  # the peer sees the connection end
        assert server.events[-1] == "lost"

    run(main())


def test_a_peer_reset_ends_the_connection_with_its_error(certs: LocalCerts) -> None:
    async def main() -> None:
        server, client = Collector(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        client_sock = client_t.get_extra_info("socket")
        client_sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client_t.abort()  # linger 0: the close is a reset
        exc = await server.lost
        assert exc is None or isinstance(exc, (ConnectionError, ssl.SSLError, OSError))
        assert server.events.count("lost") == 1

    run(main())


def test_bytes_openssl_holds_when_the_transport_is_made_are_read(certs: LocalCerts) -> None:
    """Part of a record was read before the transport existed: the rest sits decrypted in
    OpenSSL, the socket shows nothing readable, and the transport still delivers it."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        listener = socket.create_server(("127.0.0.1", 0))
        listener.setblocking(False)
        port = listener.getsockname()[1]
        client_ctx = certs.client_config(mutual=False).client_context()
        with listener:
            connecting = asyncio.ensure_future(
                open_tls_socket("127.0.0.1", port, client_ctx, "127.0.0.1")
            )
            conn, _ = await loop.sock_accept(listener)
        server_sock = wrap_tls(conn, certs.server_config(mutual=False).server_context())
        server_handshake = asyncio.ensure_future(handshake(server_sock))
        client_sock = await connecting
        client = Collector()
        client_t = TlsSocketTransport(loop, client_sock, client)
        client_t.write(b"hello")  # may reach the server while its handshake still runs
        await server_handshake
        first = bytearray()

        def take_two() -> bool:
            try:
                first.extend(server_sock.recv(2))
            except ssl.SSLWantReadError:
                return False
            return True

        await until(take_two)
        assert first == b"he" and server_sock.pending() == 3
        server = Collector()
        server_t = TlsSocketTransport(loop, server_sock, server)
        await until(lambda: bytes(server.data) == b"llo")
        info = server_t.get_extra_info("cipher")
        assert info is not None and server_t.get_extra_info("sslcontext") is not None
        client_t.close()
        server_t.close()
        await asyncio.gather(client.lost, server.lost)

    run(main())


def test_write_buffer_limits_are_checked_and_applied(certs: LocalCerts) -> None:
    async def main() -> None:
        server, client = Collector(), Collector()
        server_t, client_t = await _pair(certs, server, client)
        with pytest.raises(ValueError, match="high"):
            client_t.set_write_buffer_limits(high=10, low=20)
        client_t.set_write_buffer_limits(high=1 << 30)
        assert client_t.get_write_buffer_limits() == (1 << 28, 1 << 30)
        server_t.pause_reading()
        client_t.write(os.urandom(8 << 20))
        assert "pause" not in client.events  # under the new high-water mark
        client_t.abort()
        server_t.abort()

    run(main())

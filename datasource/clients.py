"""One client per cluster endpoint per Python process, made on first use, never pickled.

Spark reuses its Python workers across tasks and micro-batches, so a connected
``Fluvio`` (its SC metadata watch and pooled SPU connections) is kept here, in module
state, instead of in readers or partitions, which must pickle. Clients are keyed by the
address ``resolve_endpoint`` gives (an explicit endpoint, else ``FLUVIO_ENDPOINT``, else
the profile), so None and the address it resolves to share one client, and by the client
token ``resolve_token`` gives for it (the ``token`` option, else ``FLUVIO_TOKEN``, else
the profile's), and by the TLS settings: two queries with different tokens or TLS never
share a connection. ``with_client`` runs a call and, when the connection under it has
closed (the SC restarted, the process was forked), drops the cached client and retries
the call once on a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from spark_stream.client import Fluvio, TlsConfig, resolve_endpoint
from spark_stream.client.profile import resolve_token
from spark_stream.errors import ConnectionClosedError

__all__ = ["client_for", "drop_client", "with_client", "close_all"]

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[tuple[str, TlsConfig | None, str | None], Fluvio] = {}


def _key(
    endpoint: str | None, tls: TlsConfig | None, token: str | None
) -> tuple[str, TlsConfig | None, str | None]:
    address = resolve_endpoint(endpoint)
    return address, tls, resolve_token(token, address)


def client_for(
    endpoint: str | None, *, tls: TlsConfig | None = None, token: str | None = None
) -> Fluvio:
    """The process's client for ``endpoint`` (None: as ``resolve_endpoint`` finds it),
    ``tls`` and ``token`` (None: as ``resolve_token`` finds it), connecting once.

    Args:
        tls: the ``tls.*`` options; None takes the profile's TLS when the profile names
            the endpoint (``resolve_tls``), else plaintext.

    Raises:
        NotFoundError: no endpoint, no ``FLUVIO_ENDPOINT`` and no profile.
        InvalidConfigError: a malformed ``FLUVIO_ENDPOINT`` or profile.
        TlsError: the cluster refused the TLS settings.
        AuthenticationError: the cluster checks tokens and this one is missing or bad.
    """
    key = _key(endpoint, tls, token)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = Fluvio.connect(key[0], tls=tls, token=key[2])
            _clients[key] = client
        return client


def drop_client(
    endpoint: str | None, *, tls: TlsConfig | None = None, token: str | None = None
) -> None:
    """Forget and close the cached client for ``endpoint``, ``tls`` and ``token`` (if any)."""
    key = _key(endpoint, tls, token)
    with _lock:
        client = _clients.pop(key, None)
    if client is not None:
        # Closing a broken client must not mask the error that made us drop it.
        with contextlib.suppress(Exception):
            client.close()


def with_client(
    endpoint: str | None,
    call: Callable[[Fluvio], T],
    *,
    tls: TlsConfig | None = None,
    token: str | None = None,
) -> T:
    """Run ``call(client)``; on a closed connection, reconnect and run it once more."""
    try:
        return call(client_for(endpoint, tls=tls, token=token))
    except ConnectionClosedError:
        drop_client(endpoint, tls=tls, token=token)
        return call(client_for(endpoint, tls=tls, token=token))


def close_all() -> None:
    """Close every cached client (at interpreter exit, and in tests)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


atexit.register(close_all)

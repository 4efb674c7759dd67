"""One client per cluster endpoint per Python process, made on first use, never pickled.

Spark reuses its Python workers across tasks and micro-batches, so a connected
``Fluvio`` (its SC metadata watch and pooled SPU connections) is kept here, in module
state, instead of in readers or partitions, which must pickle. Clients are keyed by the
address ``resolve_endpoint`` gives (an explicit endpoint, else ``FLUVIO_ENDPOINT``, else
the profile), so None and the address it resolves to share one client. ``with_client`` runs a
call and, when the connection under it has closed (the SC restarted, the process was
forked), drops the cached client and retries the call once on a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from spark_stream.client import Fluvio, TlsConfig, resolve_endpoint
from spark_stream.errors import ConnectionClosedError

__all__ = ["client_for", "drop_client", "with_client", "close_all"]

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[tuple[str, TlsConfig | None], Fluvio] = {}


def client_for(endpoint: str | None, tls: TlsConfig | None = None) -> Fluvio:
    """The process's client for ``endpoint`` (None: as ``resolve_endpoint`` finds it),
    connecting once.

    Args:
        tls: the ``tls.*`` options; None takes the profile's TLS when the profile names
            the endpoint (``resolve_tls``), else plaintext.

    Raises:
        NotFoundError: no endpoint, no ``FLUVIO_ENDPOINT`` and no profile.
        InvalidConfigError: a malformed ``FLUVIO_ENDPOINT`` or profile.
        TlsError: the cluster refused the TLS settings.
    """
    address = resolve_endpoint(endpoint)
    with _lock:
        client = _clients.get((address, tls))
        if client is None:
            client = Fluvio.connect(address, tls=tls)
            _clients[(address, tls)] = client
        return client


def drop_client(endpoint: str | None, tls: TlsConfig | None = None) -> None:
    """Forget and close the cached client for ``endpoint`` (if any)."""
    address = resolve_endpoint(endpoint)
    with _lock:
        client = _clients.pop((address, tls), None)
    if client is not None:
        # Closing a broken client must not mask the error that made us drop it.
        with contextlib.suppress(Exception):
            client.close()


def with_client(
    endpoint: str | None, call: Callable[[Fluvio], T], tls: TlsConfig | None = None
) -> T:
    """Run ``call(client)``; on a closed connection, reconnect and run it once more."""
    try:
        return call(client_for(endpoint, tls))
    except ConnectionClosedError:
        drop_client(endpoint, tls)
        return call(client_for(endpoint, tls))


def close_all() -> None:
    """Close every cached client (at interpreter exit, and in tests)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


atexit.register(close_all)

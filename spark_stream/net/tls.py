"""TLS settings and the ``ssl.SSLContext`` each end of a connection builds from them.

One ``TlsConfig`` (PEM file paths and a flag) configures both ends: a server takes its
certificate and key and, for mutual TLS, the CA its clients' certificates must chain to;
a client takes the CA it trusts and, for mutual TLS, a certificate of its own. A process
that is both (an SPU serves clients and connects to the SC and to its leaders) uses the
same files for both roles, so one certificate per process is enough.

The config is plain data (it pickles and travels to Spark executors); contexts are built
where connections are made and never pickled. Every problem with the files (missing,
unreadable, key not matching the certificate) is an ``InvalidConfigError`` naming the
file, raised when the context is built, before any socket is opened.
"""

from __future__ import annotations

import functools
import ssl
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from spark_stream.errors import InvalidConfigError

__all__ = [
    "TlsConfig",
    "TLS_RECORD_HANDSHAKE",
    "server_context",
    "client_context",
    "requires_client_cert",
    "is_tls_error",
    "describe_tls_error",
]

TLS_RECORD_HANDSHAKE = 0x16
"""The first byte of a TLS ClientHello; a plaintext frame starts with its length's high
byte (below 0x05 for any frame under the 64 MiB limit), so one byte tells them apart."""


class TlsConfig(BaseModel):
    """Where the PEM files are, and whether a server demands client certificates.

    Attributes:
        cert: this side's certificate chain (PEM). A server needs one; a client presents
            it when the server requires client certificates (mutual TLS).
        key: the private key of ``cert`` (PEM, unencrypted).
        ca: the CA certificate(s) (PEM) to trust: a client verifies the server against
            them (None: the system's CAs), a server verifies client certificates.
        require_client_cert: a server refuses clients without a certificate that
            chains to ``ca`` (mutual TLS); clients ignore it.
        check_hostname: a client checks that the server's certificate names the host it
            dialled (an IP literal must be in the certificate's IP addresses).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cert: str | None = Field(None, description="Certificate chain (PEM) of this side.")
    key: str | None = Field(None, description="Private key (PEM) of cert.")
    ca: str | None = Field(None, description="CA certificate(s) (PEM) to trust.")
    require_client_cert: bool = Field(
        False, description="Servers: refuse clients without a certificate from ca (mTLS)."
    )
    check_hostname: bool = Field(
        True, description="Clients: the server certificate must name the host dialled."
    )

    def server_context(self) -> ssl.SSLContext:
        """The context a server wraps accepted connections in.

        With ``require_client_cert`` the context asks for a client certificate and
        verifies any it gets (``CERT_OPTIONAL``); ``Server`` then refuses a client that
        sent none with a ``TlsError`` reply over the established connection, which the
        client can read (a refusal inside the handshake reaches it as a bare reset).

        Raises:
            InvalidConfigError: no certificate or key, a file is missing or unreadable,
                or ``require_client_cert`` without a ``ca`` to verify clients against.
        """
        if not self.cert or not self.key:
            raise InvalidConfigError("tls: a server needs both 'cert' and 'key' (PEM files)")
        if self.require_client_cert and not self.ca:
            raise InvalidConfigError(
                "tls: require_client_cert needs 'ca', the CA client certificates chain to"
            )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_chain(context)
        if self.ca:
            _load_ca(context, self.ca)
        context.verify_mode = ssl.CERT_OPTIONAL if self.require_client_cert else ssl.CERT_NONE
        return context

    def client_context(self) -> ssl.SSLContext:
        """The context a client connects with: it verifies the server (always).

        Raises:
            InvalidConfigError: a file is missing or unreadable, or ``cert`` without
                ``key`` (or the reverse).
        """
        if bool(self.cert) != bool(self.key):
            raise InvalidConfigError("tls: a client certificate needs both 'cert' and 'key'")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.ca:
            _load_ca(context, self.ca)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        context.check_hostname = self.check_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        if self.cert:
            self._load_chain(context)
        return context

    def _load_chain(self, context: ssl.SSLContext) -> None:
        assert self.cert and self.key
        for what, path in (("cert", self.cert), ("key", self.key)):
            _check_file(what, path)
        try:
            context.load_cert_chain(self.cert, self.key)
        except (ssl.SSLError, OSError) as exc:
            raise InvalidConfigError(
                f"tls: cannot load certificate {self.cert} with key {self.key}: {exc}"
            ) from exc


def _check_file(what: str, path: str) -> None:
    if not Path(path).is_file():
        raise InvalidConfigError(f"tls: '{what}' file {path} does not exist")


def _load_ca(context: ssl.SSLContext, path: str) -> None:
    _check_file("ca", path)
    try:
        context.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as exc:
        raise InvalidConfigError(f"tls: cannot load CA file {path}: {exc}") from exc


@functools.cache
def _server_context(config: TlsConfig) -> ssl.SSLContext:
    return config.server_context()


@functools.cache
def _client_context(config: TlsConfig) -> ssl.SSLContext:
    return config.client_context()


def server_context(config: TlsConfig | None) -> ssl.SSLContext | None:
    """The server context of ``config`` (None: plaintext), built once per process: every
    server and connection of a process shares it (certificates are read at first use, so
    new files take a restart)."""
    return None if config is None else _server_context(config)


def client_context(config: TlsConfig | None) -> ssl.SSLContext | None:
    """The client context of ``config`` (None: plaintext), built once per process."""
    return None if config is None else _client_context(config)


def requires_client_cert(context: ssl.SSLContext) -> bool:
    """True when a server with ``context`` must refuse clients without a certificate."""
    return context.verify_mode != ssl.CERT_NONE


def is_tls_error(exc: BaseException | None) -> bool:
    """True when ``exc`` (or what caused it) is a TLS failure: a handshake refused, a
    certificate not trusted, an alert from the peer."""
    while exc is not None:
        if isinstance(exc, ssl.SSLError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def describe_tls_error(exc: BaseException, *, server_side: bool = False) -> str:
    """A TLS failure in words an operator can act on, with the library's own reason.

    ``[SSL: CERTIFICATE_VERIFY_FAILED] ... unable to get local issuer certificate`` says
    what failed; the hint says which side's certificate and which file to look at.

    Args:
        exc: the failure.
        server_side: the failure was seen by a server (about its client's certificate).
    """
    text = str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
        if server_side:
            hint = "the client's certificate is not signed by this server's CA ('ca')"
        elif "mismatch" in text:
            hint = "the server's certificate does not name the host dialled"
        else:
            hint = "the server's certificate is not trusted by the client's CA ('ca')"
    elif "CERTIFICATE_REQUIRED" in text or "PEER_DID_NOT_RETURN" in text:
        hint = "the server requires a client certificate ('cert' and 'key')"
    elif "UNKNOWN_CA" in text or "BAD_CERTIFICATE" in text:
        hint = "the server does not trust the client's certificate (signed by another CA)"
    elif "WRONG_VERSION_NUMBER" in text or "RECORD_LAYER_FAILURE" in text:
        hint = "the peer does not speak TLS on this port"
    elif "HTTP_REQUEST" in text:
        hint = "the peer sent plaintext"
    else:
        hint = "the TLS handshake failed"
    return f"{hint}: {text}"

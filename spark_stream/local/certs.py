"""A local CA and the certificates of a TLS local cluster (``fluvio cluster start --tls``).

``ensure_local_certs(directory)`` writes, once, under ``{data_dir}/tls/``::

    ca.pem, ca.key          the cluster's own CA (trusted by every process and client)
    server.pem, server.key  the SC's and SPUs' certificate (serverAuth and clientAuth:
                            an SPU presents it to the SC and to its leaders under mTLS)
    client.pem, client.key  the clients' certificate (the CLI, Python and Spark)
    client.p12              the same client certificate and key as PKCS#12 for the JVM
                            connector (password ``CLIENT_P12_PASSWORD``)

The server certificate names ``127.0.0.1``, ``::1`` and ``localhost``: the addresses a
local cluster binds and advertises. Keys are ECDSA P-256 (fast to make, accepted by
OpenSSL and Java alike); certificates last ten years. A later start reuses the files, so
clients keep trusting the cluster across restarts. Private keys are written mode 0600.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from spark_stream.net.tls import TlsConfig

__all__ = ["LocalCerts", "ensure_local_certs", "CLIENT_P12_PASSWORD", "LOCAL_HOSTS"]

CLIENT_P12_PASSWORD = "fluvio"
"""Password of ``client.p12`` (PKCS#12 files need one for the JVM's KeyStore)."""
LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost")
_VALID = dt.timedelta(days=3650)


@dataclass(frozen=True, slots=True)
class LocalCerts:
    """Paths of a local cluster's TLS files (see the module docstring)."""

    directory: Path

    @property
    def ca(self) -> Path:
        """The CA certificate every process and client trusts."""
        return self.directory / "ca.pem"

    def cert(self, role: str) -> Path:
        """The certificate of ``role`` (``server`` or ``client``)."""
        return self.directory / f"{role}.pem"

    def key(self, role: str) -> Path:
        """The private key of ``role``."""
        return self.directory / f"{role}.key"

    @property
    def client_p12(self) -> Path:
        """The client certificate and key as PKCS#12 (password ``CLIENT_P12_PASSWORD``)."""
        return self.directory / "client.p12"

    def server_config(self, *, mutual: bool) -> TlsConfig:
        """The SC's and SPUs' settings: their certificate, the CA, mTLS when ``mutual``."""
        return TlsConfig(
            cert=str(self.cert("server")),
            key=str(self.key("server")),
            ca=str(self.ca),
            require_client_cert=mutual,
        )

    def client_config(self, *, mutual: bool) -> TlsConfig:
        """A client's settings: trust the CA, present the client certificate when ``mutual``."""
        if not mutual:
            return TlsConfig(ca=str(self.ca))
        return TlsConfig(
            ca=str(self.ca), cert=str(self.cert("client")), key=str(self.key("client"))
        )

    def complete(self) -> bool:
        """True when every file is there."""
        files = [self.ca, self.client_p12]
        files += [p for role in ("server", "client") for p in (self.cert(role), self.key(role))]
        return all(p.is_file() for p in files)


def ensure_local_certs(directory: Path, hosts: tuple[str, ...] = LOCAL_HOSTS) -> LocalCerts:
    """The local cluster's TLS files in ``directory``, made now unless all are there.

    Args:
        directory: where the files live (``{data_dir}/tls``).
        hosts: the names and addresses the server certificate is valid for.
    """
    certs = LocalCerts(directory)
    if certs.complete():
        return certs
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # tolerate clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fluvio local CA")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(certs.directory / "ca.key", ca_key)
    certs.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    for role in ("server", "client"):
        key = ec.generate_private_key(ec.SECP256R1())
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        if role == "server":
            usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"fluvio local {role}")])
        builder = (
            _builder(name, ca_name, key.public_key(), now)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
        )
        if role == "server":
            builder = builder.add_extension(_alt_names(hosts), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        _write_key(certs.key(role), key)
        certs.cert(role).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        if role == "client":
            p12 = pkcs12.serialize_key_and_certificates(
                b"fluvio-client",
                key,
                cert,
                [ca_cert],
                serialization.BestAvailableEncryption(CLIENT_P12_PASSWORD.encode()),
            )
            _write_private(certs.client_p12, p12)
    return certs


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: dt.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALID)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _alt_names(hosts: tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(path, data)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` readable by the owner only (0600 from the start, no window)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)

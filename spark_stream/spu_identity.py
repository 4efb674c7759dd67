"""SPU identity: per-SPU secrets, their verifiers, and the peer handshake's proofs.

Theory of operation.

- **Secret and verifier.** Each SPU has its own random secret (``new_secret``), made when
  it is registered (``fluvio spu register``, the local cluster, the SC's provisioner).
  The KV keeps only its verifier (``secret_verifier``: SHA-256 of the secret, hex) in the
  SPU spec; the SPU process reads the secret from its environment or from a 0600 file in
  its data dir (``SECRET_FILE``). The SC accepts ``SPU_CONNECT`` for id N only with the
  secret whose verifier SPU N's spec holds (``secret_matches``), so an SPU cannot speak
  for another id. A secret of 32 random bytes makes the hash one-way in practice.
- **Peer keys.** The SC holds a random master key (never stored) and gives each accepted
  SPU, over its authenticated ``SPU_CONNECT`` stream, one key per peer SPU:
  ``pair_key(master, a, b)``, the same for (a, b) and (b, a). Only SPUs a and b (and the
  SC) know it, so a third SPU cannot pass for either of them.
- **Peer handshake** (SPU private port, before any replication message): the follower
  sends its id and a nonce; the leader answers with its nonce and its proof; the
  follower checks it and sends its own proof. Each proof is an HMAC of both ids and both
  nonces under the pair key, with the role in the message so one side's proof is never
  valid as the other's (``peer_proof``). Fresh nonces on both sides: a recorded
  handshake cannot be replayed.

Everything here is pure except the two secret-file helpers at the end.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Literal

from spark_stream.errors import InvalidConfigError

__all__ = [
    "SECRET_FILE",
    "NONCE_BYTES",
    "new_secret",
    "secret_verifier",
    "secret_matches",
    "new_master_key",
    "pair_key",
    "new_nonce",
    "peer_proof",
    "proof_matches",
    "write_secret_file",
    "read_secret_file",
]

#: The file in an SPU's data dir that holds its secret (mode 0600).
SECRET_FILE = "spu.secret"
#: Length of a handshake nonce.
NONCE_BYTES = 16
_VERIFIER_PREFIX = "sha256:"

Role = Literal["leader", "follower"]


def new_secret() -> str:
    """A fresh SPU secret: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def secret_verifier(secret: str) -> str:
    """What the KV stores for ``secret``: ``sha256:`` and the hex digest."""
    return _VERIFIER_PREFIX + hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, verifier: str | None) -> bool:
    """Whether ``secret`` is the one ``verifier`` was made from (constant time)."""
    if not verifier:
        return False
    return hmac.compare_digest(secret_verifier(secret).encode(), verifier.encode())


def new_master_key() -> bytes:
    """The SC's peer master key: 32 random bytes, held in memory only."""
    return secrets.token_bytes(32)


def pair_key(master: bytes, a: int, b: int) -> bytes:
    """The key SPUs ``a`` and ``b`` share (symmetric in ``a`` and ``b``)."""
    low, high = sorted((a, b))
    return hmac.new(master, f"fluvio-peer:{low}:{high}".encode(), hashlib.sha256).digest()


def new_nonce() -> bytes:
    """A fresh handshake nonce."""
    return secrets.token_bytes(NONCE_BYTES)


def peer_proof(
    key: bytes, role: Role, follower: int, leader: int, follower_nonce: bytes, leader_nonce: bytes
) -> bytes:
    """The proof ``role`` sends in the handshake between ``follower`` and ``leader``."""
    text = f"{role}:{follower}:{leader}:".encode() + follower_nonce + b":" + leader_nonce
    return hmac.new(key, text, hashlib.sha256).digest()


def proof_matches(expected: bytes, got: bytes) -> bool:
    """Constant-time comparison of two proofs."""
    return hmac.compare_digest(expected, got)


def write_secret_file(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path`` with mode 0600 (created so, never readable by others)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    tmp.replace(path)


def read_secret_file(path: Path) -> str:
    """The secret in ``path`` (an SPU's secret, or the Redis password).

    Raises:
        InvalidConfigError: the file is missing, empty or readable by others (world).
    """
    try:
        mode = path.stat().st_mode
        text = path.read_text().strip()
    except OSError as exc:
        raise InvalidConfigError(f"cannot read the secret file {path}: {exc}") from exc
    if mode & 0o007:  # group-readable is allowed: Kubernetes mounts secrets so (fsGroup)
        raise InvalidConfigError(
            f"the secret file {path} is readable by others (mode {mode & 0o777:o}); chmod 600 it"
        )
    if not text:
        raise InvalidConfigError(f"the secret file {path} is empty")
    return text

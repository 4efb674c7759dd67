"""The keys this SPU shares with each peer SPU, and both sides of the peer handshake.

The SC pushes the keys with ``UpdateSpus`` (``peer_keys``) over the authenticated
``SPU_CONNECT`` stream; ``PeerKeyring`` keeps them (a full push replaces them, an
incremental one adds, a deleted SPU's key goes). ``LeaderHandshake`` is the leader's
side of the handshake on one private-port connection, ``follower_handshake`` the
follower's (see ``spark_stream.spu_identity`` for the proofs and
``spu.private_messages`` for the conversation). A refused peer gets
``UnauthorizedError``; the private server closes its connection.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from spark_stream.errors import UnauthorizedError
from spark_stream.net.connection import Connection
from spark_stream.protocol.control import UpdateSpus
from spark_stream.spu_identity import new_nonce, peer_proof, proof_matches
from spu.private_messages import (
    PeerAuthRequest,
    PeerAuthResponse,
    PeerHelloRequest,
    PeerHelloResponse,
)

__all__ = ["PeerKeyring", "LeaderHandshake", "follower_handshake"]

logger = logging.getLogger(__name__)


class PeerKeyring:
    """Peer SPU id -> the key this SPU shares with it, as the SC pushed them."""

    def __init__(self) -> None:
        self._keys: dict[int, bytes] = {}

    def apply(self, update: UpdateSpus) -> None:
        """Take the keys of an ``UpdateSpus`` push."""
        if update.full:
            self._keys = {}
        for spu_id in update.deleted:
            self._keys.pop(spu_id, None)
        self._keys.update(update.peer_key_map())

    def get(self, spu_id: int) -> bytes | None:
        """The key shared with ``spu_id``; None before the SC pushed one."""
        return self._keys.get(spu_id)


@dataclass(slots=True)
class LeaderHandshake:
    """The leader's side of the handshake on one connection.

    Args:
        spu_id: this (the leader) SPU.
        keys: the keyring.
    """

    spu_id: int
    keys: PeerKeyring
    _challenge: tuple[int, bytes, bytes] | None = None
    peer: int | None = None
    """The follower SPU the connection speaks for, once authenticated."""

    def hello(self, msg: PeerHelloRequest) -> PeerHelloResponse:
        """Answer ``PEER_HELLO`` with this SPU's nonce and proof.

        Raises:
            UnauthorizedError: the follower meant another SPU, or has no key here.
        """
        if msg.leader_id != self.spu_id:
            raise UnauthorizedError(f"this is SPU {self.spu_id}, not SPU {msg.leader_id}")
        key = self._key(msg.spu_id)
        nonce = new_nonce()
        self._challenge = (msg.spu_id, msg.nonce, nonce)
        return PeerHelloResponse(
            nonce, peer_proof(key, "leader", msg.spu_id, self.spu_id, msg.nonce, nonce)
        )

    def auth(self, msg: PeerAuthRequest) -> PeerAuthResponse:
        """Check the follower's proof; the connection then speaks for it.

        Raises:
            UnauthorizedError: no ``PEER_HELLO`` for that id first, or a wrong proof.
        """
        challenge, self._challenge = self._challenge, None  # one attempt per hello
        if challenge is None or challenge[0] != msg.spu_id:
            raise UnauthorizedError(f"SPU {msg.spu_id}: send PEER_HELLO first")
        follower, follower_nonce, leader_nonce = challenge
        expected = peer_proof(
            self._key(follower), "follower", follower, self.spu_id, follower_nonce, leader_nonce
        )
        if not proof_matches(expected, msg.proof):
            raise UnauthorizedError(
                f"SPU {follower} failed peer authentication (its proof does not match "
                f"the key SPU {self.spu_id} shares with it)"
            )
        self.peer = follower
        return PeerAuthResponse(follower)

    def check(self, spu_id: int) -> None:
        """Allow a replication message for ``spu_id`` only on its authenticated connection.

        Raises:
            UnauthorizedError: the connection is not authenticated, or for another SPU.
        """
        if self.peer is None:
            raise UnauthorizedError(
                f"SPU {spu_id}: authenticate with PEER_HELLO and PEER_AUTH before replicating"
            )
        if self.peer != spu_id:
            raise UnauthorizedError(f"this connection speaks for SPU {self.peer}, not SPU {spu_id}")

    def _key(self, peer: int) -> bytes:
        key = self.keys.get(peer)
        if key is None:
            raise UnauthorizedError(
                f"SPU {peer} is not a peer of SPU {self.spu_id} (no key from the SC for it)"
            )
        return key


async def follower_handshake(
    conn: Connection,
    keys: PeerKeyring,
    spu_id: int,
    leader_id: int,
    timeout: float,  # noqa: ASYNC109 - each call's bound, as Connection.call takes it
) -> None:
    """Authenticate this SPU to leader ``leader_id`` on ``conn``, and the leader to it.

    Raises:
        UnauthorizedError: no key for the leader yet, the leader's proof is wrong, or the
            leader refused this SPU's.
    """
    key = keys.get(leader_id)
    if key is None:
        raise UnauthorizedError(f"no peer key for SPU {leader_id} yet (the SC pushes them)")
    nonce = new_nonce()
    hello = await conn.call(PeerHelloRequest(spu_id, leader_id, nonce), timeout=timeout)
    assert isinstance(hello, PeerHelloResponse)
    expected = peer_proof(key, "leader", spu_id, leader_id, nonce, hello.nonce)
    if not proof_matches(expected, hello.proof):
        raise UnauthorizedError(f"SPU {leader_id} failed peer authentication (wrong proof)")
    proof = peer_proof(key, "follower", spu_id, leader_id, nonce, hello.nonce)
    await conn.call(PeerAuthRequest(spu_id, proof), timeout=timeout)

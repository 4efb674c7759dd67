"""The peer handshake's leader side, the keyring and the LEO clamp, without servers."""

from __future__ import annotations

import pytest

from spark_stream.errors import UnauthorizedError
from spark_stream.protocol.control import UpdateSpus
from spark_stream.spu_identity import new_master_key, new_nonce, pair_key, peer_proof
from spu.peer_keys import LeaderHandshake, PeerKeyring
from spu.private_api import clamp_report
from spu.private_messages import PeerAuthRequest, PeerHelloRequest

MASTER = new_master_key()
LEADER, FOLLOWER, OTHER = 1, 2, 3


def keyring(owner: int, peers: tuple[int, ...]) -> PeerKeyring:
    keys = PeerKeyring()
    keys.apply(UpdateSpus(True, peer_keys={str(p): pair_key(MASTER, owner, p) for p in peers}))
    return keys


def follower_proof(key: bytes, nonce: bytes, leader_nonce: bytes) -> bytes:
    return peer_proof(key, "follower", FOLLOWER, LEADER, nonce, leader_nonce)


def test_a_follower_with_the_pair_key_authenticates_and_checks_the_leader() -> None:
    shake = LeaderHandshake(LEADER, keyring(LEADER, (FOLLOWER, OTHER)))
    key = pair_key(MASTER, FOLLOWER, LEADER)
    nonce = new_nonce()
    hello = shake.hello(PeerHelloRequest(FOLLOWER, LEADER, nonce))
    assert hello.proof == peer_proof(key, "leader", FOLLOWER, LEADER, nonce, hello.nonce)
    assert shake.auth(PeerAuthRequest(FOLLOWER, follower_proof(key, nonce, hello.nonce))).spu_id
    shake.check(FOLLOWER)
    with pytest.raises(UnauthorizedError, match="speaks for SPU 2, not SPU 3"):
        shake.check(OTHER)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("no hello", "send PEER_HELLO first"),
        ("another spu's key", "SPU 2 failed peer authentication"),
        ("the leader's proof echoed", "SPU 2 failed peer authentication"),
        ("a replayed proof", "SPU 2 failed peer authentication"),
    ],
)
def test_a_forged_follower_is_refused(case: str, match: str) -> None:
    shake = LeaderHandshake(LEADER, keyring(LEADER, (FOLLOWER, OTHER)))
    nonce = new_nonce()
    if case == "no hello":
        proof = b"x" * 32
    else:
        hello = shake.hello(PeerHelloRequest(FOLLOWER, LEADER, nonce))
        if case == "another spu's key":  # SPU 3 knows its key with the leader, not 2's
            proof = follower_proof(pair_key(MASTER, OTHER, LEADER), nonce, hello.nonce)
        elif case == "the leader's proof echoed":
            proof = hello.proof
        else:  # a proof recorded from an earlier handshake
            earlier = follower_proof(pair_key(MASTER, FOLLOWER, LEADER), nonce, new_nonce())
            proof = earlier
    with pytest.raises(UnauthorizedError, match=match):
        shake.auth(PeerAuthRequest(FOLLOWER, proof))
    with pytest.raises(UnauthorizedError, match="authenticate with PEER_HELLO"):
        shake.check(FOLLOWER)


def test_hello_for_another_leader_or_from_an_unknown_spu_is_refused() -> None:
    shake = LeaderHandshake(LEADER, keyring(LEADER, (FOLLOWER,)))
    with pytest.raises(UnauthorizedError, match="this is SPU 1, not SPU 9"):
        shake.hello(PeerHelloRequest(FOLLOWER, 9, new_nonce()))
    with pytest.raises(UnauthorizedError, match="SPU 3 is not a peer of SPU 1"):
        shake.hello(PeerHelloRequest(OTHER, LEADER, new_nonce()))


def test_the_keyring_follows_full_and_incremental_pushes() -> None:
    keys = keyring(LEADER, (FOLLOWER, OTHER))
    keys.apply(UpdateSpus(False, deleted=[OTHER], peer_keys={"4": b"k4"}))
    assert (keys.get(FOLLOWER), keys.get(OTHER), keys.get(4)) == (
        pair_key(MASTER, LEADER, FOLLOWER),
        None,
        b"k4",
    )
    keys.apply(UpdateSpus(True, peer_keys={"5": b"k5"}))
    assert (keys.get(FOLLOWER), keys.get(5)) == (None, b"k5")


@pytest.mark.parametrize(
    ("reported", "sent", "taken"),
    [
        (10, 10, 10),
        (7, 10, 7),  # behind what was sent: as reported
        (50, 10, 10),  # a forged "caught up": clamped to what was sent
        (50, 0, 0),
        (5, None, None),  # nothing sent on this connection: not taken at all
    ],
)
def test_a_follower_report_is_clamped_to_what_was_sent(
    reported: int, sent: int | None, taken: int | None
) -> None:
    assert clamp_report(reported, sent) == taken

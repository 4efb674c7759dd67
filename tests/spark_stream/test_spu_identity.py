"""SPU secrets, verifiers, pair keys and handshake proofs (pure), and the secret file."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_stream.errors import InvalidConfigError
from spark_stream.spu_identity import (
    new_master_key,
    new_nonce,
    new_secret,
    pair_key,
    peer_proof,
    proof_matches,
    read_secret_file,
    secret_matches,
    secret_verifier,
    write_secret_file,
)


def test_a_verifier_matches_only_its_own_secret() -> None:
    one, two = new_secret(), new_secret()
    assert one != two and len(one) >= 40
    verifier = secret_verifier(one)
    assert verifier.startswith("sha256:") and one not in verifier
    assert secret_matches(one, verifier)
    assert not secret_matches(two, verifier)
    assert not secret_matches(one, None)
    assert not secret_matches(one, "")


@pytest.mark.parametrize(
    ("a", "b", "c", "d", "same"),
    [
        (1, 2, 2, 1, True),  # symmetric
        (1, 2, 1, 2, True),
        (1, 2, 1, 3, False),  # another peer, another key
        (1, 2, 3, 2, False),
        (5001, 5002, 5002, 5003, False),
    ],
)
def test_pair_keys_are_symmetric_and_distinct_per_pair(
    a: int, b: int, c: int, d: int, same: bool
) -> None:
    master = new_master_key()
    assert (pair_key(master, a, b) == pair_key(master, c, d)) is same


def test_another_master_gives_other_keys() -> None:
    assert pair_key(new_master_key(), 1, 2) != pair_key(new_master_key(), 1, 2)


def test_a_proof_binds_role_ids_and_both_nonces() -> None:
    key = pair_key(new_master_key(), 1, 2)
    nf, nl = new_nonce(), new_nonce()
    proof = peer_proof(key, "follower", 1, 2, nf, nl)
    assert proof_matches(proof, peer_proof(key, "follower", 1, 2, nf, nl))
    others = [
        peer_proof(key, "leader", 1, 2, nf, nl),  # the other side's proof
        peer_proof(key, "follower", 2, 1, nf, nl),  # ids swapped
        peer_proof(key, "follower", 1, 2, new_nonce(), nl),  # replayed to a new nonce
        peer_proof(key, "follower", 1, 2, nf, new_nonce()),
        peer_proof(pair_key(new_master_key(), 1, 2), "follower", 1, 2, nf, nl),
    ]
    assert not any(proof_matches(proof, other) for other in others)


def test_the_secret_file_is_0600_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "spu-1" / "spu.secret"
    write_secret_file(path, "s3cret")
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_secret_file(path) == "s3cret"


def test_a_bad_secret_file_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "spu.secret"
    with pytest.raises(InvalidConfigError, match="cannot read the secret file .*spu.secret"):
        read_secret_file(path)
    write_secret_file(path, "s3cret")
    path.chmod(0o644)
    with pytest.raises(InvalidConfigError, match="readable by others .*chmod 600"):
        read_secret_file(path)
    path.chmod(0o600)
    path.write_text("\n")
    with pytest.raises(InvalidConfigError, match="is empty"):
        read_secret_file(path)

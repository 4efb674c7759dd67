"""The log refuses crc-valid frames no reader could decode, before writing anything.

Accepted frames read back exactly; with ``check_payload="none"`` the same poison gets in
and every reader of it then fails, naming its offsets (what the check prevents).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from spark_stream.errors import CorruptFrameError
from spark_stream.records import BATCH_HEADER_SIZE, decode_frame, with_base_offset
from spu.storage import LogConfig, ReplicaLog
from tests.frame_mutations import POISON, resealed, sample
from tests.spu.storage.helpers import make_frame, read_values

OpenLog = Callable[..., ReplicaLog]


@pytest.mark.parametrize("name", sorted(POISON))
def test_a_poisoned_frame_is_refused_and_nothing_is_written(open_log: OpenLog, name: str) -> None:
    log = open_log(LogConfig())
    log.append_produced(make_frame(0, 3))
    size = log.size_bytes
    with pytest.raises(CorruptFrameError, match=r"the frame of offsets \[0, \d+\]"):
        log.append_produced([make_frame(1, 2), POISON[name](sample())])
    assert (log.leo, log.size_bytes) == (3, size)
    assert log.append_produced(make_frame(2, 1)) == [3]  # the log keeps taking good frames


def test_without_the_check_the_poison_gets_in_and_readers_fail_naming_it(
    open_log: OpenLog,
) -> None:
    log = open_log(LogConfig(check_payload="none"))
    log.append_produced(make_frame(0, 3))
    log.append_produced(POISON["list offsets past the child"](sample()))
    with pytest.raises(CorruptFrameError, match=r"the frame of offsets \[3, 4\]"):
        read_values(log)


def test_every_single_byte_change_is_refused_or_reads_back_exactly(open_log: OpenLog) -> None:
    log = open_log(LogConfig())
    frame = sample()
    accepted = 0
    for pos in range(BATCH_HEADER_SIZE, len(frame), 3):
        damaged = bytearray(frame)
        damaged[pos] ^= 0x5A
        mutated = resealed(damaged)
        leo = log.leo
        try:
            (base,) = log.append_produced(mutated)
        except CorruptFrameError:
            assert log.leo == leo
            continue
        accepted += 1
        (stored,) = log.read(base, 1 << 20).decode()
        assert stored.equals(decode_frame(mutated))
    assert accepted > 0


def test_a_follower_takes_what_its_leader_holds_without_a_second_payload_check(
    open_log: OpenLog,
) -> None:
    """The leader is the one that checks payloads; a follower refusing a frame its leader
    holds (one appended under ``none``) would only fall out of sync. The crc still counts."""
    log = open_log(LogConfig())
    poison = POISON["list offsets past the child"](sample())
    assert log.append_replicated(poison) == [0]
    damaged = bytearray(make_frame(1, 1))
    damaged[-3] ^= 0x55
    with pytest.raises(CorruptFrameError, match="crc mismatch"):
        log.append_replicated(with_base_offset(bytes(damaged), 2))

"""Field-checking benchmark: microseconds to turn decoded meta into a typed message.

Each case is a typical message encoded with ``to_meta`` and decoded with msgpack, as a
receiver gets it; the figure is ``Message.from_meta`` on that meta (field checks, the
tail attached, the constructor and its ``__post_init__``), not the msgpack decoding.
The hot ones (produce, fetch, stream pushes) run once per batch; the metadata updates
carry nested maps (incremental: one topic; full: 100 topics of 3 partitions).

With ``--baseline REV`` the same cases also run through the ``_fields.py`` of that git
revision (loaded with ``git show``), interleaved with the current code round by round;
each figure is the best round. Prints a table and, as the last line, one JSON object.

    ./dev bench fields [--baseline 5cf5e45] [--rounds 7]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_stream.models import (
    Partition,
    PartitionSpec,
    PartitionStatus,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
    SpuSpec,
    Topic,
    TopicSpec,
)
from spark_stream.protocol import (
    Acks,
    FetchRequest,
    FetchResponse,
    Isolation,
    Message,
    ProduceRequest,
    StreamFetchPush,
    decode_meta,
    encode_meta,
)
from spark_stream.protocol.control import MetadataUpdate, SpuConnectRequest

Decode = Callable[[type[Message], dict[str, Any], memoryview], Message]
SAMPLE_SECONDS = 0.05


def _metadata(topics: int, spus: int) -> MetadataUpdate:
    """A metadata push of ``topics`` topics of 3 partitions over ``spus`` SPUs."""
    spu_objects = [
        Spu.new(f"spu-{i}", SpuSpec(spu_id=i, public_endpoint=PublicEndpoint(port=9000 + i)))
        for i in range(1, spus + 1)
    ]
    topic_objects, partitions = [], []
    for t in range(topics):
        topic = Topic.new(f"topic-{t}", TopicSpec(partitions=3, replication_factor=2))
        topic_objects.append(topic)
        for p in range(3):
            replicas = (1 + (t + p) % spus, 1 + (t + p + 1) % spus)
            spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
            status = PartitionStatus(leader=replicas[0], leo=1000 * p, hw=1000 * p)
            partitions.append(Partition.new(topic.name, p, spec, status))
    return MetadataUpdate(
        full=topics > 1,
        revision=1234,
        spus=[s.to_dict() for s in spu_objects],
        topics=[t.to_dict() for t in topic_objects],
        partitions=[p.to_dict() for p in partitions],
    )


def cases() -> dict[str, tuple[type[Message], dict[str, Any], memoryview]]:
    """Name -> (class, meta as msgpack decodes it, tail as the connection hands it over)."""
    tail = memoryview(b"\x00" * 1024)
    messages: dict[str, Message] = {
        "produce_request": ProduceRequest("orders", 3, Acks.ALL, 5000, tail=bytes(tail)),
        "fetch_request": FetchRequest("orders", 3, 123_456, isolation=Isolation.UNCOMMITTED),
        "fetch_response": FetchResponse(hw=123_500, leo=123_600, log_start=0, tail=bytes(tail)),
        "stream_fetch_push": StreamFetchPush(hw=9, leo=9, log_start=0, tail=bytes(tail)),
        "spu_connect_request": SpuConnectRequest.build(
            5001, "secret", PublicEndpoint(port=9005), PrivateEndpoint(port=9006)
        ),
        "metadata_update_1_topic": _metadata(topics=1, spus=3),
        "metadata_update_100_topics": _metadata(topics=100, spus=3),
    }
    return {
        name: (type(msg), decode_meta(encode_meta(msg.to_meta())), tail)
        for name, msg in messages.items()
    }


def current(cls: type[Message], meta: dict[str, Any], tail: memoryview) -> Message:
    """Decode with the code in this tree."""
    return cls.from_meta(meta, tail)


def baseline(rev: str) -> Decode:
    """Decode as ``Message.from_meta`` did with ``_fields.py`` at git revision ``rev``."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", f"{rev}:spark_stream/protocol/_fields.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    old = types.ModuleType(f"baseline_fields_{rev}")
    sys.modules[old.__name__] = old  # dataclasses look their module up while defining
    exec(compile(source, f"{rev}:_fields.py", "exec"), old.__dict__)

    def decode(cls: type[Message], meta: dict[str, Any], tail: memoryview) -> Message:
        # The body of the baseline's Message.from_meta, line for line.
        kwargs = old.meta_kwargs(cls, meta)
        if any(f.name == "tail" for f in dataclasses.fields(cls)):  # type: ignore[arg-type]
            kwargs["tail"] = tail
        return cls(**kwargs)

    return decode


def _sample(decode: Decode, cls: type[Message], meta: dict[str, Any], tail: memoryview) -> float:
    """Microseconds per decode over about ``SAMPLE_SECONDS``."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            decode(cls, meta, tail)
        elapsed = time.perf_counter() - start
        if elapsed >= SAMPLE_SECONDS:
            return elapsed / n * 1e6
        n *= 2


def run(decoders: dict[str, Decode], rounds: int) -> dict[str, dict[str, float]]:
    """Best microseconds per message, by case then by decoder, rounds interleaved."""
    table = cases()
    for name, (cls, meta, tail) in table.items():  # both sides must agree before timing
        results = {label: decode(cls, meta, tail) for label, decode in decoders.items()}
        if len({repr(r) for r in results.values()}) != 1:
            raise AssertionError(f"{name}: decoders disagree: {results}")
    best: dict[str, dict[str, float]] = {name: {} for name in table}
    for r in range(rounds):
        order = list(decoders.items())
        if r % 2:
            order.reverse()
        for name, (cls, meta, tail) in table.items():
            for label, decode in order:
                us = _sample(decode, cls, meta, tail)
                best[name][label] = min(best[name].get(label, us), us)
    return {name: {k: round(v, 2) for k, v in row.items()} for name, row in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="git revision whose _fields.py to compare against")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds, best kept")
    args = parser.parse_args()
    decoders: dict[str, Decode] = {"new": current}
    if args.baseline:
        decoders = {"old": baseline(args.baseline), "new": current}
    result = run(decoders, args.rounds)
    for name, row in result.items():
        cells = "  ".join(f"{label} {us:8.2f} us" for label, us in row.items())
        ratio = f"  (old/new {row['old'] / row['new']:.1f}x)" if "old" in row else ""
        print(f"{name:28} {cells}{ratio}")
    print(json.dumps({"bench": "fields", "baseline": args.baseline, "us_per_message": result}))


if __name__ == "__main__":
    main()

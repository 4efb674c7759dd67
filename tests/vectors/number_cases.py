"""Numbers both sides must compute or agree on: key hashes (``key_hashes.json``, the
default partitioner's FNV-1a, for ``PartitionerTest``), producer ids derived from
identities (``producer_ids.json``, as the exactly-once sink derives them, for
``ProducerIdsTest``) and the wire error codes (``error_codes.json``, for ``ErrorCodeTest``).
"""

from __future__ import annotations

from typing import Any

from spark_stream.client.config import MAX_PRODUCER_ID, producer_id_for
from spark_stream.client.producer.partitioner import fnv1a_32
from spark_stream.protocol.codes import error_classes

__all__ = ["error_codes", "key_hashes", "producer_ids"]


def key_hashes() -> dict[str, Any]:
    """32-bit FNV-1a of keys (the default partitioner's hash)."""
    keys = [b"", b"a", b"key-1", b"orders/42", "größe".encode(), bytes(range(256)), b"\xff" * 64]
    return {"fnv1a_32": [{"key": k.hex(), "hash": fnv1a_32(k)} for k in keys]}


def producer_ids() -> dict[str, Any]:
    """Producer ids derived from identities, as the exactly-once sink derives them."""
    identities: list[list[str | int]] = [
        ["q"],
        ["query-1", 0, 3],
        ["3f1c0f5e-8a3b-4f5e-9d2a-0c1b2a3d4e5f", 17, 0],
        ["query-1", 4_294_967_296, 12],
        ["ünïcode", -5, "x"],
        ["b" * 128],  # exactly one BLAKE2b block
        ["long-" + "y" * 300, 1],  # several blocks
    ]
    return {
        "max_producer_id": MAX_PRODUCER_ID,
        "separator": "\x1f",
        "ids": [{"parts": parts, "id": producer_id_for(*parts)} for parts in identities],
    }


def error_codes() -> dict[str, Any]:
    """The wire error codes: code, Python type name, retriable."""
    return {
        "errors": [
            {"code": cls.code, "name": cls.__name__, "retriable": cls.retriable}
            for cls in error_classes()
        ]
    }

"""The meta map of a frame: msgpack encoding and decoding with typed errors.

Meta holds the small control fields of a message (topic, partition, offsets, a pydantic
model dumped to a dict). It is always a msgpack *map* with string keys. Timezone-aware
``datetime`` values travel as msgpack timestamps and come back as UTC datetimes; other
extension types are refused so a peer cannot smuggle objects in.
"""

from __future__ import annotations

from typing import Any

import msgpack

from spark_stream.errors import InvalidRequestError

__all__ = ["encode_meta", "decode_meta"]


def _refuse_ext(code: int, data: bytes) -> Any:
    raise InvalidRequestError(f"msgpack extension type {code} is not allowed in meta")


def encode_meta(meta: dict[str, Any]) -> bytes:
    """Encode a meta dict as msgpack.

    Raises:
        InvalidRequestError: ``meta`` is not a dict or holds a value msgpack cannot encode.
    """
    if not isinstance(meta, dict):
        raise InvalidRequestError(f"meta must be a dict, got {type(meta).__name__}")
    try:
        return msgpack.packb(meta, use_bin_type=True, datetime=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidRequestError(f"meta cannot be encoded as msgpack: {exc}") from exc


def decode_meta(buf: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode msgpack meta bytes to a dict; empty bytes decode to ``{}``.

    Raises:
        InvalidRequestError: the bytes are not one msgpack map with string keys.
    """
    if len(buf) == 0:
        return {}
    try:
        meta = msgpack.unpackb(
            buf, raw=False, strict_map_key=True, timestamp=3, ext_hook=_refuse_ext
        )
    except InvalidRequestError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException) as exc:
        raise InvalidRequestError(f"malformed msgpack meta: {exc}") from exc
    if not isinstance(meta, dict):
        raise InvalidRequestError(f"meta must be a msgpack map, got {type(meta).__name__}")
    for key in meta:
        if not isinstance(key, str):
            raise InvalidRequestError(f"meta keys must be strings, got {key!r}")
    return meta

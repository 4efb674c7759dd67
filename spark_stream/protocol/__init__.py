"""The wire protocol, pure: frames, the frame decoder, api keys, messages. No I/O here.

``spark_stream.net.connection`` and ``spark_stream.net.server`` move these frames over asyncio
streams; everything in this package works on bytes in memory. The layout is specified
in ``docs/protocol.md``.
"""

from __future__ import annotations

from spark_stream.protocol._gates import GateEntry, UpdateGates
from spark_stream.protocol.api import API_VERSIONS, STREAM_APIS, ApiKey, api_name
from spark_stream.protocol.data import (
    DEFAULT_FETCH_MAX_BYTES,
    GROUP_FETCH_VERSION,
    Acks,
    FetchLocalRequest,
    FetchLocalResponse,
    FetchOffsetsRequest,
    FetchOffsetsResponse,
    FetchRequest,
    FetchResponse,
    Isolation,
    ProduceRequest,
    ProduceResponse,
    StreamFetchPush,
    StreamFetchRequest,
)
from spark_stream.protocol.decoder import Event, FrameDecoder
from spark_stream.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    FRAME_HEADER_SIZE,
    FRAME_MAGIC,
    MAX_CORRELATION_ID,
    Buffer,
    FileRegion,
    Frame,
    FrameFlags,
    FrameHeader,
    FrameKind,
    OversizedFrame,
    Tail,
    TailPart,
    as_buffer,
    encode_frame,
    parse_header,
    part_length,
    received_tail,
    tail_length,
)
from spark_stream.protocol.message import (
    ErrorReply,
    Message,
    Payload,
    Push,
    Request,
    Role,
    message,
    message_type,
)
from spark_stream.protocol.meta import decode_meta, encode_meta

__all__ = [
    "API_VERSIONS",
    "STREAM_APIS",
    "ApiKey",
    "api_name",
    "DEFAULT_FETCH_MAX_BYTES",
    "GROUP_FETCH_VERSION",
    "GateEntry",
    "UpdateGates",
    "Acks",
    "Isolation",
    "ProduceRequest",
    "ProduceResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchLocalRequest",
    "FetchLocalResponse",
    "FetchOffsetsRequest",
    "FetchOffsetsResponse",
    "StreamFetchRequest",
    "StreamFetchPush",
    "Event",
    "FrameDecoder",
    "DEFAULT_MAX_FRAME_SIZE",
    "FRAME_MAGIC",
    "FRAME_HEADER_SIZE",
    "MAX_CORRELATION_ID",
    "Buffer",
    "FileRegion",
    "Tail",
    "TailPart",
    "Frame",
    "FrameFlags",
    "FrameHeader",
    "FrameKind",
    "OversizedFrame",
    "encode_frame",
    "parse_header",
    "received_tail",
    "tail_length",
    "part_length",
    "as_buffer",
    "ErrorReply",
    "Message",
    "Payload",
    "Request",
    "Push",
    "Role",
    "message",
    "message_type",
    "decode_meta",
    "encode_meta",
]

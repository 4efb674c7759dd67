from __future__ import annotations

import pyarrow as pa

from spark_stream.protocol import FrameDecoder, FrameKind, encode_frame
from spark_stream.protocol.body_buffer import body_buffer
from spark_stream.protocol.decoder import BODY_BUFFER_MIN


def test_a_body_buffer_is_a_writable_byte_view_of_its_size() -> None:
    view = body_buffer(1000)
    assert (view.nbytes, view.format, view.readonly) == (1000, "B", False)
    view[:] = bytes(range(250)) * 4  # a plain bytes view assigns into it
    assert bytes(view[-3:]) == bytes([247, 248, 249])


def test_a_large_decoded_body_lives_in_arrow_memory_and_reads_back_whole() -> None:
    tail = bytes(range(256)) * (BODY_BUFFER_MIN // 128)
    data = b"".join(bytes(p) for p in encode_frame(FrameKind.REQUEST, 1, 9, {"k": 1}, tail))
    decoder = FrameDecoder()
    events = []
    for i in range(0, len(data), 4096):
        events += decoder.feed(data[i : i + 4096])
    (frame,) = events
    assert bytes(frame.tail) == tail
    # The tail's buffer is Arrow's, and wraps into an Arrow buffer without a copy.
    body = frame.tail.obj
    assert isinstance(body, pa.Buffer)
    wrapped = pa.py_buffer(frame.tail)
    assert wrapped.size == len(tail)
    assert body.address <= wrapped.address < body.address + body.size

package io.sparkstream.fluvio.records;

import java.nio.ByteBuffer;

/**
 * One frame found in a buffer of back-to-back frames: its header and the bytes of the
 * whole frame (a slice of the buffer, not a copy).
 *
 * @param header the parsed (and, when asked, crc-checked) header
 * @param frame the frame's bytes, header included, position 0
 */
public record FrameSlice(BatchHeader header, ByteBuffer frame) {

  /** The Arrow message after the header (a slice, not a copy). */
  public ByteBuffer payload() {
    return frame.duplicate().position(BatchHeader.SIZE).slice();
  }
}

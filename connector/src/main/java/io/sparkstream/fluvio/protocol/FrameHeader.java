package io.sparkstream.fluvio.protocol;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The fixed 20-byte header of a protocol frame ({@code FrameHeader} of {@code
 * spark_stream/protocol/frame.py}; see docs/protocol.md).
 *
 * <p>Theory of operation. Every message on every connection is one frame, all integers
 * little-endian:
 *
 * <pre>
 *  off size field
 *    0    4 length          u32, bytes after this field: 16 + meta_length + tail
 *    4    1 magic           0xF5
 *    5    1 kind            FrameKind
 *    6    1 flags           bit 0 STREAM: this request opens a stream of pushes
 *    7    1 reserved        0
 *    8    2 api_key         u16
 *   10    2 version         u16
 *   12    4 correlation_id  u32, chosen by the requester, echoed in every reply
 *   16    4 meta_length     u32, bytes of msgpack meta that follow the header
 *   20    .  meta           msgpack map
 *    .    .  tail           raw bytes to the end of the frame (batch frames)
 * </pre>
 *
 * The checks and messages are those of Python's {@code parse_header}.
 *
 * @param kind what the frame is
 * @param flags the flags byte ({@link #STREAM} or 0)
 * @param apiKey the api of the request
 * @param version the api version of the meta layout
 * @param correlationId the requester's id (u32, held in a long)
 * @param metaLength bytes of meta
 * @param bodyLength bytes after the header (meta and tail)
 */
public record FrameHeader(
    FrameKind kind,
    int flags,
    int apiKey,
    int version,
    long correlationId,
    long metaLength,
    long bodyLength) {

  /** Bytes of the header. */
  public static final int SIZE = 20;

  /** The magic byte. */
  public static final int MAGIC = 0xF5;

  /** Flag bit 0: the request opens a stream. */
  public static final int STREAM = 1;

  private static final int AFTER_LENGTH = SIZE - 4;

  /** Bytes of the whole frame, header included. */
  public long frameLength() {
    return SIZE + bodyLength;
  }

  /** Bytes of the raw tail after the meta. */
  public long tailLength() {
    return bodyLength - metaLength;
  }

  /** True when a request asks for a stream of pushes. */
  public boolean isStream() {
    return (flags & STREAM) != 0;
  }

  /**
   * Parse and sanity-check the header at {@code pos}.
   *
   * @param buf the bytes (position and order unused)
   * @param pos where the header starts
   * @return the header
   * @throws FluvioException {@code CORRUPT_FRAME}: the stream cannot be resynchronised
   */
  public static FrameHeader parse(ByteBuffer buf, int pos) {
    ByteBuffer b = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int available = b.limit() - pos;
    if (available < SIZE) {
      throw corrupt("truncated protocol header: %d of %d bytes".formatted(available, SIZE));
    }
    long length = Integer.toUnsignedLong(b.getInt(pos));
    int magic = b.get(pos + 4) & 0xFF;
    int kind = b.get(pos + 5) & 0xFF;
    int flags = b.get(pos + 6) & 0xFF;
    int reserved = b.get(pos + 7) & 0xFF;
    int apiKey = b.getShort(pos + 8) & 0xFFFF;
    int version = b.getShort(pos + 10) & 0xFFFF;
    long correlationId = Integer.toUnsignedLong(b.getInt(pos + 12));
    long metaLength = Integer.toUnsignedLong(b.getInt(pos + 16));
    if (magic != MAGIC) {
      throw corrupt(
          ("bad protocol magic 0x%02x, expected 0x%02x: the peer does not speak this protocol"
                  + " or the stream is out of sync")
              .formatted(magic, MAGIC));
    }
    FrameKind frameKind = FrameKind.ofCode(kind);
    if (frameKind == null) {
      throw corrupt("unknown frame kind " + kind);
    }
    if ((flags & ~STREAM) != 0) {
      throw corrupt("unknown frame flags 0x%02x".formatted(flags));
    }
    if (reserved != 0) {
      throw corrupt("reserved header byte is %d, must be 0".formatted(reserved));
    }
    if (length < AFTER_LENGTH) {
      throw corrupt("frame length %d is shorter than its own header".formatted(length));
    }
    long bodyLength = length - AFTER_LENGTH;
    if (metaLength > bodyLength) {
      throw corrupt(
          "meta length %d is longer than the frame body (%d bytes)"
              .formatted(metaLength, bodyLength));
    }
    return new FrameHeader(
        frameKind, flags, apiKey, version, correlationId, metaLength, bodyLength);
  }

  /**
   * The 20 header bytes.
   *
   * @return the bytes
   */
  public byte[] encode() {
    return ByteBuffer.allocate(SIZE)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putInt((int) (AFTER_LENGTH + bodyLength))
        .put((byte) MAGIC)
        .put((byte) kind.code())
        .put((byte) flags)
        .put((byte) 0)
        .putShort((short) apiKey)
        .putShort((short) version)
        .putInt((int) correlationId)
        .putInt((int) metaLength)
        .array();
  }

  private static FluvioException corrupt(String message) {
    return new FluvioException(ErrorCode.CORRUPT_FRAME, message);
  }
}

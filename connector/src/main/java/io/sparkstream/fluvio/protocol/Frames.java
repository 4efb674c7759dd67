package io.sparkstream.fluvio.protocol;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * Building protocol frames, byte-identical to Python's {@code encode_frame}.
 *
 * <p>An empty meta is sent as the one-byte msgpack {@code {}}, as Python does.
 */
public final class Frames {
  private Frames() {}

  /** The largest frame built or accepted by default (64 MiB, as in Python). */
  public static final long DEFAULT_MAX_FRAME_SIZE = 64L * 1024 * 1024;

  private static final long U16 = 0xFFFF;
  private static final long U32 = 0xFFFF_FFFFL;

  /**
   * Encode one frame.
   *
   * @param kind what the frame is
   * @param apiKey the api of the request (u16)
   * @param correlationId the requester's id (u32)
   * @param meta the control fields, in wire order
   * @param tail raw bytes appended as is (position to limit); may be empty
   * @param version the api version of the meta layout (u16)
   * @param flags {@link FrameHeader#STREAM} on a stream-opening request, else 0
   * @return the frame bytes
   * @throws FluvioException {@code INVALID_REQUEST}: a header field out of range or meta
   *     that cannot be encoded; {@code RECORD_TOO_LARGE}: over {@link
   *     #DEFAULT_MAX_FRAME_SIZE}
   */
  public static byte[] encode(
      FrameKind kind,
      int apiKey,
      long correlationId,
      Map<String, ?> meta,
      ByteBuffer tail,
      int version,
      int flags) {
    if (apiKey < 0 || apiKey > U16) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST, "api key %d does not fit in 16 bits".formatted(apiKey));
    }
    if (version < 0 || version > U16) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST,
          "api version %d does not fit in 16 bits".formatted(version));
    }
    if (correlationId < 0 || correlationId > U32) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST,
          "correlation id %d does not fit in 32 bits".formatted(correlationId));
    }
    byte[] metaBytes = Meta.encode(meta);
    int tailLength = tail.remaining();
    long body = (long) metaBytes.length + tailLength;
    long frameLength = FrameHeader.SIZE + body;
    if (frameLength > DEFAULT_MAX_FRAME_SIZE) {
      throw new FluvioException(
          ErrorCode.RECORD_TOO_LARGE,
          "frame of %d bytes passes the limit of %d bytes"
              .formatted(frameLength, DEFAULT_MAX_FRAME_SIZE));
    }
    FrameHeader header =
        new FrameHeader(kind, flags, apiKey, version, correlationId, metaBytes.length, body);
    return ByteBuffer.allocate((int) frameLength)
        .put(header.encode())
        .put(metaBytes)
        .put(tail.duplicate())
        .array();
  }
}

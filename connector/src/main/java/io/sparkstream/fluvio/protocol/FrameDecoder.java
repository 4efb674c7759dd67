package io.sparkstream.fluvio.protocol;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;

/**
 * A sans-I/O frame decoder (Python's {@code FrameDecoder}): fed bytes as they arrive from
 * a socket, it hands out whole frames; it never touches a socket itself, so it is tested
 * with plain byte arrays.
 *
 * <p>A corrupt header makes the decoder fail for good (the byte stream cannot be
 * resynchronised): every later call throws the same error. A frame larger than the limit
 * fails it as well ({@code RECORD_TOO_LARGE}); unlike the Python server, a client has no
 * use for skipping it.
 */
public final class FrameDecoder {
  private final long maxFrameSize;
  private ByteBuffer buffer = ByteBuffer.allocate(0);
  private FluvioException failure;

  /** A decoder with the default 64 MiB limit. */
  public FrameDecoder() {
    this(Frames.DEFAULT_MAX_FRAME_SIZE);
  }

  /**
   * A decoder that refuses frames larger than {@code maxFrameSize} bytes.
   *
   * @param maxFrameSize the limit, header included
   */
  public FrameDecoder(long maxFrameSize) {
    this.maxFrameSize = maxFrameSize;
  }

  /** Bytes received but not yet handed out as frames. */
  public int buffered() {
    return buffer.remaining();
  }

  /**
   * Add received bytes (copied).
   *
   * <p>Bytes are appended after the unread ones; when the array is full, the unread bytes
   * move to a new array of at least twice the size (amortised linear copying). The array
   * is never compacted in place: frames already handed out are slices of it and must keep
   * their bytes.
   *
   * @param data the bytes, position to limit (not consumed)
   */
  public void feed(ByteBuffer data) {
    int incoming = data.remaining();
    if (buffer.capacity() - buffer.limit() < incoming) {
      int needed = buffer.remaining() + incoming;
      ByteBuffer grown = ByteBuffer.allocate(Math.max(needed, Math.max(4096, buffer.capacity() * 2)));
      grown.put(buffer.duplicate()).flip();
      buffer = grown;
    }
    int at = buffer.limit();
    buffer.limit(at + incoming);
    buffer.duplicate().position(at).put(data.duplicate());
  }

  /**
   * The next whole frame, or null when more bytes are needed.
   *
   * @return the frame (meta and tail are slices of the decoder's buffer), or null
   * @throws FluvioException {@code CORRUPT_FRAME} or {@code RECORD_TOO_LARGE}, for this and
   *     every later call
   */
  public Frame next() {
    if (failure != null) {
      throw failure;
    }
    if (buffer.remaining() < FrameHeader.SIZE) {
      return null;
    }
    FrameHeader header;
    try {
      header = FrameHeader.parse(buffer.slice(), 0);
    } catch (FluvioException e) {
      failure = e;
      throw e;
    }
    if (header.frameLength() > maxFrameSize) {
      failure =
          new FluvioException(
              ErrorCode.RECORD_TOO_LARGE,
              "frame of %d bytes passes the limit of %d bytes"
                  .formatted(header.frameLength(), maxFrameSize));
      throw failure;
    }
    if (buffer.remaining() < header.frameLength()) {
      return null;
    }
    int start = buffer.position() + FrameHeader.SIZE;
    int metaEnd = start + (int) header.metaLength();
    int end = buffer.position() + (int) header.frameLength();
    ByteBuffer meta = buffer.duplicate().limit(metaEnd).position(start).slice();
    ByteBuffer tail = buffer.duplicate().limit(end).position(metaEnd).slice();
    buffer.position(end);
    return new Frame(header, meta, tail);
  }
}

package io.sparkstream.fluvio.protocol;

/**
 * What a protocol frame is ({@code FrameKind} of {@code spark_stream/protocol/frame.py}):
 * requests flow one way, everything else answers a request.
 */
public enum FrameKind {
  REQUEST,
  RESPONSE,
  ERROR,
  PUSH,
  END,
  CANCEL,
  CREDIT;

  /** The byte on the wire. */
  public int code() {
    return ordinal();
  }

  /**
   * The kind of a wire byte.
   *
   * @param code the byte
   * @return the kind, or null when no kind has that value
   */
  public static FrameKind ofCode(int code) {
    FrameKind[] all = values();
    return code >= 0 && code < all.length ? all[code] : null;
  }
}

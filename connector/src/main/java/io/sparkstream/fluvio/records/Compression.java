package io.sparkstream.fluvio.records;

/**
 * The Arrow IPC buffer compression of a batch frame: bits 0-1 of its {@code attributes}
 * byte, as {@code spark_stream/records.py} writes them. Readers need not care: Arrow
 * decompresses the buffers when it loads the batch.
 */
public enum Compression {
  NONE("none", 0),
  LZ4("lz4", 1),
  ZSTD("zstd", 2);

  /** The attribute bits that hold the codec. */
  public static final int CODEC_BITS = 0b11;

  private final String wireName;
  private final int code;

  Compression(String wireName, int code) {
    this.wireName = wireName;
    this.code = code;
  }

  /** The name used in options and by Python ({@code none}, {@code lz4}, {@code zstd}). */
  public String wireName() {
    return wireName;
  }

  /** The value of the codec bits. */
  public int code() {
    return code;
  }

  /**
   * The codec of a frame's attributes byte; code 3 is refused earlier by {@link
   * BatchHeader#read}, and falls back to {@link #NONE} here as in Python.
   *
   * @param attributes the attributes byte of a batch header
   * @return the codec
   */
  public static Compression ofAttributes(int attributes) {
    int bits = attributes & CODEC_BITS;
    for (Compression c : values()) {
      if (c.code == bits) {
        return c;
      }
    }
    return NONE;
  }
}

package io.sparkstream.fluvio.records;

import java.util.List;

/**
 * One record to produce, the row of {@link RecordSchema#SCHEMA} a producer writes.
 *
 * @param key the key, or null
 * @param value the value (not null)
 * @param timestampUs microseconds since the epoch, UTC
 * @param headers {@code (name, value)} pairs, or null for none
 */
public record Record(byte[] key, byte[] value, long timestampUs, List<Header> headers) {

  /**
   * One record header.
   *
   * @param key the header name
   * @param value the header value, or null
   */
  public record Header(String key, byte[] value) {}

  /** Checks the value is present. */
  public Record {
    if (value == null) {
      throw new IllegalArgumentException("a record needs a value");
    }
  }
}

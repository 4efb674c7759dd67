package io.sparkstream.fluvio.records;

import java.util.List;

/**
 * One record to produce: the row of {@link RecordSchema#SCHEMA} a producer writes, or a
 * typed topic's row (its user column values instead of a value).
 *
 * @param key the key, or null
 * @param value the value (not null unless {@code columns} is given)
 * @param timestampUs microseconds since the epoch, UTC
 * @param headers {@code (name, value)} pairs, or null for none
 * @param columns a typed topic's user column values in the topic's order (see {@link
 *     FrameEncoder#encode(List, TopicSchema, Compression, long, int, org.apache.arrow.memory.BufferAllocator)}
 *     for their Java types), or null for an untyped record
 */
public record Record(byte[] key, byte[] value, long timestampUs, List<Header> headers, Object[] columns) {

  /**
   * One record header.
   *
   * @param key the header name
   * @param value the header value, or null
   */
  public record Header(String key, byte[] value) {}

  /** An untyped record. */
  public Record(byte[] key, byte[] value, long timestampUs, List<Header> headers) {
    this(key, value, timestampUs, headers, null);
  }

  /** Checks the value (or the typed columns) is present. */
  public Record {
    if (value == null && columns == null) {
      throw new IllegalArgumentException("a record needs a value");
    }
  }

  /** Whether this is a typed topic's row. */
  public boolean typed() {
    return columns != null;
  }
}

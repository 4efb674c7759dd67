package io.sparkstream.fluvio.datasource;

import java.io.Serializable;
import java.util.List;

/**
 * Where a read starts or ends ({@code OffsetSpec} of {@code datasource/options.py}):
 * {@code earliest}, {@code latest}, per-partition offsets from the JSON form, or a time.
 *
 * @param defaultOffset {@link #EARLIEST} or {@link #LATEST}, for partitions not named
 * @param specific offsets from the JSON form (may be {@code EARLIEST}/{@code LATEST})
 * @param timestampMs the time form, milliseconds since the epoch; null when not given
 * @param group the group form {@code group:NAME} (starting offsets only): each partition
 *     starts at the group's committed offset, {@code defaultOffset} where it has none;
 *     null when not given
 */
public record OffsetSpec(long defaultOffset, List<Specific> specific, Long timestampMs, String group)
    implements Serializable {

  /** A spec without the group form. */
  public OffsetSpec(long defaultOffset, List<Specific> specific, Long timestampMs) {
    this(defaultOffset, specific, timestampMs, null);
  }

  /** In offset JSON, as in Kafka: the first offset still in the log. */
  public static final long EARLIEST = -2;

  /** In offset JSON, as in Kafka: the end of the log (HW, or LEO when uncommitted). */
  public static final long LATEST = -1;

  /**
   * One partition's offset from the JSON form.
   *
   * @param topic the topic
   * @param partition the partition
   * @param offset the offset, or {@code EARLIEST}/{@code LATEST}
   */
  public record Specific(String topic, int partition, long offset) implements Serializable {}

  /**
   * The offset (or {@code EARLIEST}/{@code LATEST}) this spec names for one partition.
   *
   * @param topic the topic
   * @param partition the partition
   * @return the offset
   */
  public long forPartition(String topic, int partition) {
    for (Specific s : specific) {
      if (s.topic.equals(topic) && s.partition == partition) {
        return s.offset;
      }
    }
    return defaultOffset;
  }
}

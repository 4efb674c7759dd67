package io.sparkstream.fluvio.datasource;

import java.io.Serializable;
import java.util.List;

/**
 * Where a read starts or ends ({@code OffsetSpec} of {@code datasource/offset_spec.py}):
 * {@code earliest}, {@code latest}, per-partition offsets from the JSON form, or a time.
 *
 * @param defaultOffset {@link #EARLIEST} or {@link #LATEST}, for partitions not named
 * @param specific offsets from the JSON form (may be {@code EARLIEST}/{@code LATEST})
 * @param timestampMs the time form, milliseconds since the epoch; null when not given
 * @param group the group form {@code group:NAME} (starting offsets only): each partition
 *     starts at the group's committed offset, {@code defaultOffset} where it has none;
 *     null when not given
 * @param timestamps the per-partition time form ({@code startingOffsetsByTimestamp}/{@code
 *     endingOffsetsByTimestamp}): each {@link Specific} holds a time in ms, not an offset;
 *     partitions not named take {@code defaultOffset}
 * @param timeStrategy a starting time with no record at or after it: {@code latest} starts
 *     at the end, {@code error} fails the query ({@code startingOffsetsByTimestampStrategy})
 */
public record OffsetSpec(
    long defaultOffset, List<Specific> specific, Long timestampMs, String group,
    List<Specific> timestamps, String timeStrategy)
    implements Serializable {

  /** A spec without the group and per-partition time forms. */
  public OffsetSpec(long defaultOffset, List<Specific> specific, Long timestampMs) {
    this(defaultOffset, specific, timestampMs, null);
  }

  /** A spec without the per-partition time form. */
  public OffsetSpec(long defaultOffset, List<Specific> specific, Long timestampMs, String group) {
    this(defaultOffset, specific, timestampMs, group, List.of(), "latest");
  }

  /**
   * The time (ms) this spec names for one partition, or null (an offset form).
   *
   * @param topic the topic
   * @param partition the partition
   * @return the time, or null
   */
  public Long timeFor(String topic, int partition) {
    for (Specific s : timestamps) {
      if (s.topic.equals(topic) && s.partition == partition) {
        return s.offset;
      }
    }
    return timestampMs;
  }

  /**
   * The option a spec came from ({@code _spec_name} of {@code datasource/reader.py}).
   *
   * @param offsets the offsets option's name ({@code startingOffsets})
   * @param timestamp the time option's name ({@code startingTimestamp})
   * @return {@code offsets + "ByTimestamp"}, {@code timestamp} or {@code offsets}
   */
  public String optionName(String offsets, String timestamp) {
    if (!timestamps.isEmpty()) {
      return offsets + "ByTimestamp";
    }
    return timestampMs != null ? timestamp : offsets;
  }

  /** Topics the JSON forms name. */
  public java.util.Set<String> topics() {
    java.util.TreeSet<String> out = new java.util.TreeSet<>();
    specific.forEach(s -> out.add(s.topic));
    timestamps.forEach(s -> out.add(s.topic));
    return out;
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

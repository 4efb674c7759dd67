package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.List;
import java.util.TreeSet;

/**
 * The pure rules of planning a batch read, with the messages of {@code
 * datasource/resolve.py}: which partitions a read selects, and where in each it starts or
 * ends given the partition's offsets now. No I/O: the caller asks the leaders.
 */
final class Planning {
  private Planning() {}

  /**
   * The partition indexes to read of a topic with {@code count} partitions.
   *
   * @param topic the topic
   * @param count its partition count
   * @param wanted the {@code partitions} option, or null for all
   * @return the indexes, ascending
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: {@code partitions} names one the
   *     topic does not have
   */
  static List<Integer> partitions(String topic, int count, List<Integer> wanted) {
    return partitions(topic, count, wanted, "partitions");
  }

  /**
   * As {@link #partitions(String, int, List)}, naming {@code option} ({@code partitions} or
   * {@code assign}) when a partition is missing.
   */
  static List<Integer> partitions(String topic, int count, List<Integer> wanted, String option) {
    if (wanted == null) {
      return java.util.stream.IntStream.range(0, count).boxed().toList();
    }
    TreeSet<Integer> missing = new TreeSet<>();
    for (int p : wanted) {
      if (p >= count) {
        missing.add(p);
      }
    }
    if (!missing.isEmpty()) {
      throw new FluvioException(
          ErrorCode.DATA_SOURCE_OPTION,
          "option '%s': topic %s has no partition(s) %s (it has %d)"
              .formatted(option, ReaderOptions.pyRepr(topic), String.join(", ", missing.stream().map(String::valueOf).toList()), count));
    }
    return wanted.stream().filter(p -> p < count).sorted().toList();
  }

  /**
   * Where a spec puts a read in one partition.
   *
   * @param spec the starting or ending spec
   * @param name the option name, for messages
   * @param topic the topic
   * @param partition the partition
   * @param now the partition's offsets now
   * @param end the visible end (HW, or LEO when uncommitted)
   * @param atTime the first offset at the spec's time, -1 when none (time form only)
   * @param failOnDataLoss the option
   * @param isolation the isolation's name, for messages
   * @return the offset
   * @throws FluvioException {@code DATA_SOURCE_OPTION} for an offset past the end, {@code
   *     DATA_LOSS} for one below the log start while {@code failOnDataLoss} is on
   */
  static long resolve(
      OffsetSpec spec, String name, String topic, int partition, PartitionOffsets now, long end,
      long atTime, boolean failOnDataLoss, String isolation) {
    Long ms = spec.timeFor(topic, partition);
    if (ms != null) {
      if (atTime < 0 && spec.timeStrategy().equals("error")) {
        throw new FluvioException(
            ErrorCode.DATA_SOURCE_OPTION,
            ("option '%s': %s/%d has no record at or after %d ms; set "
                    + "startingOffsetsByTimestampStrategy=latest to start at its end")
                .formatted(name, topic, partition, ms));
      }
      return atTime < 0 ? end : Math.min(Math.max(atTime, now.logStart()), end);
    }
    long wanted = spec.forPartition(topic, partition);
    String tp = topic + "/" + partition;
    if (wanted == OffsetSpec.EARLIEST) {
      return now.logStart();
    }
    if (wanted == OffsetSpec.LATEST) {
      return end;
    }
    if (wanted > end) {
      throw new FluvioException(
          ErrorCode.DATA_SOURCE_OPTION,
          "option '%s': offset %d of %s is past its end %d (%s)".formatted(name, wanted, tp, end, isolation));
    }
    if (wanted < now.logStart()) {
      if (failOnDataLoss) {
        throw new FluvioException(
            ErrorCode.DATA_LOSS,
            ("option '%s': offset %d of %s is below its log start %d (removed by retention); "
                    + "set failOnDataLoss=false to start at the log start instead")
                .formatted(name, wanted, tp, now.logStart()));
      }
      return now.logStart();
    }
    return wanted;
  }

  /**
   * Refuse JSON entries for partitions the read does not cover.
   *
   * @param spec the spec
   * @param name the option name
   * @param read {@code topic/partition} of every partition read
   * @throws FluvioException {@code DATA_SOURCE_OPTION}, naming the first such entry
   */
  static void checkNamed(OffsetSpec spec, String name, java.util.Set<String> read) {
    List<OffsetSpec.Specific> named = new java.util.ArrayList<>(spec.specific());
    named.addAll(spec.timestamps());
    for (OffsetSpec.Specific s : named) {
      if (!read.contains(s.topic() + "/" + s.partition())) {
        throw new FluvioException(
            ErrorCode.DATA_SOURCE_OPTION,
            "option '%s' names %s/%d, which the query does not read".formatted(name, s.topic(), s.partition()));
      }
    }
  }

  /**
   * The ranges to read, ordered by topic and partition, split when there are fewer than
   * {@code minPartitions}: each into {@code round(size / total * minPartitions)} parts (at
   * least one, half to even as Python's {@code round}), as {@code plan_ranges} of {@code
   * datasource/planning.py}.
   *
   * @param ranges one non-empty range per topic partition
   * @param minPartitions the option, or null
   * @return the input partitions
   */
  static List<FluvioInputPartition> ranges(List<FluvioInputPartition> ranges, Integer minPartitions) {
    List<FluvioInputPartition> sorted =
        ranges.stream()
            .sorted(java.util.Comparator.comparing(FluvioInputPartition::topic)
                .thenComparingInt(FluvioInputPartition::partition))
            .toList();
    if (minPartitions == null || sorted.size() >= minPartitions) {
      return sorted;
    }
    long total = sorted.stream().mapToLong(r -> r.end() - r.start()).sum();
    List<FluvioInputPartition> out = new java.util.ArrayList<>();
    for (FluvioInputPartition r : sorted) {
      long size = r.end() - r.start();
      long parts = Math.max(1, (long) Math.rint((double) size / total * minPartitions));
      parts = Math.max(1, Math.min(parts, size));
      for (long i = 0; i < parts; i++) {
        long a = r.start() + size * i / parts;
        long b = r.start() + size * (i + 1) / parts;
        out.add(new FluvioInputPartition(r.topic(), r.partition(), a, b, i == 0 && r.fromLogStart()));
      }
    }
    return out;
  }

  /**
   * Where a task starts reading its range, given the log start when it runs ({@code
   * _checked_start} of {@code datasource/partition.py}): its planned start, or the log start
   * when retention removed records meanwhile, which is data loss unless the range was
   * planned from the log start.
   *
   * @param range the range
   * @param logStart the partition's log start now
   * @param failOnDataLoss the option
   * @return the first offset to read (at most {@code range.end()})
   * @throws FluvioException {@code DATA_LOSS} when records are gone and the option is on
   */
  static long checkedStart(FluvioInputPartition range, long logStart, boolean failOnDataLoss) {
    if (range.start() >= logStart) {
      return range.start();
    }
    if (range.fromLogStart() || !failOnDataLoss) {
      return Math.min(logStart, range.end());
    }
    throw new FluvioException(
        ErrorCode.DATA_LOSS,
        "%s/%d: offsets %d..%d were removed by retention before they were read; "
                .formatted(range.topic(), range.partition(), range.start(), logStart - 1)
            + "set failOnDataLoss=false to skip them");
  }
}

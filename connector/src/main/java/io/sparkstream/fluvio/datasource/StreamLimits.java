package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The read-limit arithmetic of a micro-batch, as {@code prorate} and {@code limit_rows} of
 * {@code datasource/planning.py}: a budget (rows or bytes of one trigger) is divided among
 * partitions in proportion to their backlog by the largest-remainder method, so shares are
 * deterministic, never sum past the budget, and a budget of one record always makes
 * progress. Pure: no I/O.
 */
final class StreamLimits {
  private StreamLimits() {}

  /**
   * Split {@code total} among partitions in proportion to {@code weights}; ties go to the
   * partition that sorts first.
   *
   * @param total the budget (>= 0)
   * @param weights each partition's weight (backlog)
   * @return each partition's share (every key of {@code weights})
   */
  static Map<TopicPartition, Long> prorate(long total, Map<TopicPartition, Long> weights) {
    if (total < 0) {
      throw new IllegalArgumentException("budget must be >= 0, got " + total);
    }
    TreeMap<TopicPartition, Long> positive = new TreeMap<>(FluvioOffset.ORDER);
    weights.forEach((tp, w) -> {
      if (w > 0) {
        positive.put(tp, w);
      }
    });
    long sum = positive.values().stream().mapToLong(Long::longValue).sum();
    Map<TopicPartition, Long> out = new LinkedHashMap<>();
    weights.keySet().forEach(tp -> out.put(tp, 0L));
    if (sum == 0) {
      return out;
    }
    java.math.BigInteger bigTotal = java.math.BigInteger.valueOf(total);
    java.math.BigInteger bigSum = java.math.BigInteger.valueOf(sum);
    Map<TopicPartition, Long> remainder = new LinkedHashMap<>();
    long given = 0;
    for (Map.Entry<TopicPartition, Long> e : positive.entrySet()) {
      java.math.BigInteger[] qr = bigTotal.multiply(java.math.BigInteger.valueOf(e.getValue())).divideAndRemainder(bigSum);
      out.put(e.getKey(), qr[0].longValueExact());
      remainder.put(e.getKey(), qr[1].longValueExact());
      given += qr[0].longValueExact();
    }
    List<TopicPartition> byRemainder = new ArrayList<>(positive.keySet());
    byRemainder.sort(java.util.Comparator.<TopicPartition>comparingLong(tp -> -remainder.get(tp))
        .thenComparing(FluvioOffset.ORDER));
    for (TopicPartition tp : byRemainder.subList(0, (int) Math.min(total - given, byRemainder.size()))) {
      out.put(tp, out.get(tp) + 1);
    }
    return out;
  }

  /**
   * Whether a trigger waits ({@code minOffsetsPerTrigger} + {@code maxTriggerDelay}, as
   * {@code delay_batch} of {@code datasource/planning.py} and Spark's Kafka source decide
   * it): while fewer than {@code minRows} records are new and less than {@code maxDelayMs}
   * passed since the last trigger that ran ({@code lastMs}; 0 before the first, so the
   * first trigger never waits).
   *
   * @param minRows {@code minOffsetsPerTrigger}
   * @param newRows records visible past the query's position now
   * @param nowMs the time now
   * @param lastMs when the last trigger that did not wait ran
   * @param maxDelayMs {@code maxTriggerDelay}
   * @return true to skip this trigger
   */
  static boolean delayBatch(long minRows, long newRows, long nowMs, long lastMs, long maxDelayMs) {
    if (nowMs - lastMs >= maxDelayMs) {
      return false;
    }
    return newRows < minRows;
  }

  /**
   * End offsets that admit at most {@code maxRows} records in total past {@code start}.
   *
   * @param start where each partition starts (a partition missing here starts at 0)
   * @param latest each partition's end
   * @param maxRows the budget
   * @return the capped ends, never below their start
   */
  static Map<TopicPartition, Long> limitRows(
      Map<TopicPartition, Long> start, Map<TopicPartition, Long> latest, long maxRows) {
    Map<TopicPartition, Long> begin = new LinkedHashMap<>();
    Map<TopicPartition, Long> backlog = new LinkedHashMap<>();
    long total = 0;
    for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
      long b = start.getOrDefault(e.getKey(), 0L);
      begin.put(e.getKey(), b);
      backlog.put(e.getKey(), Math.max(0, e.getValue() - b));
      total += Math.max(0, e.getValue() - b);
    }
    Map<TopicPartition, Long> shares = prorate(Math.min(maxRows, total), backlog);
    Map<TopicPartition, Long> out = new LinkedHashMap<>();
    latest.keySet().forEach(tp -> out.put(tp, begin.get(tp) + shares.get(tp)));
    return out;
  }
}

package io.sparkstream.fluvio.datasource;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Values of the reader options Spark's Kafka source defines, with the rules and messages
 * of {@code datasource/_option_values.py}: {@code assign} (JSON of partition lists), the
 * per-partition times of {@code startingOffsetsByTimestamp}/{@code endingOffsetsByTimestamp}
 * (JSON of milliseconds), a time in milliseconds and the duration of {@code
 * maxTriggerDelay}. Pure.
 */
final class KafkaOptionValues {
  private KafkaOptionValues() {}

  private static final Pattern DURATION = Pattern.compile("([0-9]+)\\s*(ms|s|m|min|h|d)?");
  private static final Map<String, Long> DURATION_MS =
      Map.of("ms", 1L, "s", 1000L, "m", 60_000L, "min", 60_000L, "h", 3_600_000L, "d", 86_400_000L);
  private static final long MAX_MS = 253_402_300_799_999L; // 9999-12-31T23:59:59.999Z

  /**
   * One topic's partitions from {@code assign}.
   *
   * @param topic the topic
   * @param partitions its partitions, ascending, without repeats
   */
  record Assigned(String topic, List<Integer> partitions) implements java.io.Serializable {}

  private static JsonNode object(String raw, String name, String example) {
    JsonNode parsed;
    try {
      parsed = new ObjectMapper().readTree(raw.strip());
    } catch (Exception e) {
      parsed = null;
    }
    if (parsed == null || parsed.isMissingNode()) {
      throw ReaderOptions.error("option '%s' must be JSON like %s, got %s"
          .formatted(name, example, ReaderOptions.pyRepr(raw)));
    }
    if (!parsed.isObject() || parsed.isEmpty()) {
      throw ReaderOptions.error("option '%s' JSON must be a non-empty object".formatted(name));
    }
    return parsed;
  }

  /** {@code parse_assign}: {@code {"topic": [0, 1]}} in the order given. */
  static List<Assigned> assign(String raw, String name) {
    JsonNode parsed = object(raw, name, "{\"topic\": [0, 1]}");
    List<Assigned> out = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = parsed.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      JsonNode parts = e.getValue();
      boolean ok = !e.getKey().isBlank() && parts.isArray() && !parts.isEmpty();
      TreeSet<Integer> indexes = new TreeSet<>();
      if (ok) {
        for (JsonNode p : parts) {
          if (!p.isIntegralNumber() || !p.canConvertToInt() || p.intValue() < 0) {
            ok = false;
            break;
          }
          indexes.add(p.intValue());
        }
      }
      if (!ok) {
        throw ReaderOptions.error("option '%s': topic %s must map to a non-empty list of partition numbers"
            .formatted(name, ReaderOptions.pyRepr(e.getKey())));
      }
      out.add(new Assigned(e.getKey(), List.copyOf(indexes)));
    }
    return List.copyOf(out);
  }

  /** {@code parse_timestamps}: {@code {"topic": {"0": ms}}} as sorted triples. */
  static List<OffsetSpec.Specific> timestamps(String raw, String name) {
    JsonNode parsed = object(raw, name, "{\"topic\": {\"0\": 1700000000000}}");
    java.util.TreeMap<String, OffsetSpec.Specific> out = new java.util.TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = parsed.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> topic = it.next();
      if (!topic.getValue().isObject()) {
        throw ReaderOptions.error("option '%s': topic %s must map partition numbers to timestamps"
            .formatted(name, ReaderOptions.pyRepr(topic.getKey())));
      }
      for (Iterator<Map.Entry<String, JsonNode>> ps = topic.getValue().properties().iterator(); ps.hasNext(); ) {
        Map.Entry<String, JsonNode> part = ps.next();
        int index = ReaderOptions.partitionIndex(part.getKey());
        JsonNode ms = part.getValue();
        if (index < 0 || !ms.isIntegralNumber()) {
          throw ReaderOptions.error("option '%s': %s/%s -> %s is not a partition number mapped to milliseconds since the epoch"
              .formatted(name, topic.getKey(), part.getKey(), ReaderOptions.pyRepr(ms)));
        }
        long checked = checkedMs(ms.bigIntegerValue(), "option '%s' at %s/%d".formatted(name, topic.getKey(), index));
        out.put(topic.getKey() + "\0" + String.format("%010d", index),
            new OffsetSpec.Specific(topic.getKey(), index, checked));
      }
    }
    return List.copyOf(out.values());
  }

  /** {@code parse_timestamp_ms}: a time option in milliseconds since the epoch. */
  static long timestampMs(String raw, String name) {
    BigInteger ms;
    try {
      ms = new BigInteger(raw.strip());
    } catch (NumberFormatException e) {
      throw ReaderOptions.error("option '%s' must be an integer (milliseconds since the epoch), got %s"
          .formatted(name, ReaderOptions.pyRepr(raw)));
    }
    return checkedMs(ms, "option '" + name + "'");
  }

  /**
   * A time in ms, checked as {@code to_timestamp_us(ms, "ms", what)} of {@code
   * spark_stream/client/timestamps.py} checks it: a value past the year 9999 was written in a
   * finer unit and would read nothing, so it is refused naming that unit.
   */
  static long checkedMs(BigInteger ms, String what) {
    if (ms.signum() < 0) {
      throw ReaderOptions.error("%s is milliseconds since the epoch and must be >= 0, got %s".formatted(what, ms));
    }
    BigInteger limit = BigInteger.valueOf(MAX_MS);
    if (ms.compareTo(limit) <= 0) {
      return ms.longValueExact();
    }
    String[][] finer = {{"microseconds", "1000"}, {"nanoseconds", "1000000"}};
    for (String[] unit : finer) {
      BigInteger converted = ms.divide(new BigInteger(unit[1]));
      if (converted.compareTo(limit) <= 0) {
        throw ReaderOptions.error(("%s is milliseconds since the epoch, and %s ms is after the year 9999: it "
                + "looks like %s; in milliseconds that is %s (%s)")
            .formatted(what, ms, unit[0], converted, iso(converted.longValueExact())));
      }
    }
    throw ReaderOptions.error("%s is milliseconds since the epoch, and %s ms is after the year 9999".formatted(what, ms));
  }

  /** Python's {@code datetime.isoformat()} of a UTC time in ms, with {@code Z}. */
  private static String iso(long ms) {
    java.time.LocalDateTime t =
        java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000), Math.floorMod(ms, 1000) * 1_000_000,
            java.time.ZoneOffset.UTC);
    String base = t.format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss"));
    return (ms % 1000 == 0 ? base : base + ".%06d".formatted(Math.floorMod(ms, 1000) * 1000)) + "Z";
  }

  /** {@code parse_duration_ms}: {@code 15m}, {@code 30s}, {@code 500ms} (a bare number is ms). */
  static long durationMs(String raw, String name) {
    Matcher m = DURATION.matcher(raw.strip().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw ReaderOptions.error("option '%s' must be a duration like 15m, 30s or 500ms, got %s"
          .formatted(name, ReaderOptions.pyRepr(raw)));
    }
    BigInteger ms = new BigInteger(m.group(1))
        .multiply(BigInteger.valueOf(m.group(2) == null ? 1L : DURATION_MS.get(m.group(2))));
    if (ms.bitLength() >= 64) {
      throw ReaderOptions.error("option '%s' is too long: %s".formatted(name, ReaderOptions.pyRepr(raw)));
    }
    return ms.longValue();
  }
}

package io.sparkstream.fluvio.datasource;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.Collections;
import java.util.Comparator;
import java.util.Iterator;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A stream's offset as Spark checkpoints it: the next offset to read in each partition,
 * {@code {"topic": {"0": 12, "1": 40}}}, written exactly as the Python source writes it
 * ({@code json.dumps} of {@code to_json_dict} in {@code datasource/offsets.py}: topics by
 * name, partitions by number, {@code ", "} and {@code ": "} separators, ASCII escapes). So
 * Spark, which compares offsets by their JSON text, sees the same offset whichever source
 * wrote it, and a checkpoint of one source is resumed by the other.
 */
final class FluvioOffset extends Offset {
  /** Topics by name (Python's str order), then partitions by number. */
  static final Comparator<TopicPartition> ORDER =
      Comparator.comparing(TopicPartition::topic, FluvioOffset::compareCodePoints)
          .thenComparingInt(TopicPartition::partition);

  private final SortedMap<TopicPartition, Long> offsets;

  /**
   * One partition of one topic.
   *
   * @param topic the topic
   * @param partition the partition
   */
  record TopicPartition(String topic, int partition) implements java.io.Serializable {
    @Override
    public String toString() {
      return topic + "/" + partition;
    }
  }

  FluvioOffset(Map<TopicPartition, Long> offsets) {
    TreeMap<TopicPartition, Long> sorted = new TreeMap<>(ORDER);
    sorted.putAll(offsets);
    this.offsets = Collections.unmodifiableSortedMap(sorted);
  }

  /** The next offset per partition, in stable order. */
  SortedMap<TopicPartition, Long> offsets() {
    return offsets;
  }

  @Override
  public String json() {
    StringBuilder out = new StringBuilder("{");
    String topic = null;
    for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
      if (!e.getKey().topic().equals(topic)) {
        if (topic != null) {
          out.append("}, ");
        }
        topic = e.getKey().topic();
        quote(out, topic).append(": {");
      } else {
        out.append(", ");
      }
      out.append('"').append(e.getKey().partition()).append("\": ").append(e.getValue());
    }
    if (topic != null) {
      out.append('}');
    }
    return out.append('}').toString();
  }

  /**
   * Parse an offset Spark hands back (from a checkpoint of either source), as {@code
   * from_json_dict} does.
   *
   * @param json the offset's JSON
   * @return the offset
   * @throws FluvioException {@code INVALID_REQUEST}: not {@code {topic: {partition:
   *     offset}}}
   */
  static FluvioOffset parse(String json) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (Exception e) {
      throw new FluvioException(ErrorCode.INVALID_REQUEST, "a fluvio source offset must be JSON, got " + json);
    }
    if (root == null || !root.isObject()) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST, "a fluvio source offset must be an object, got " + json);
    }
    Map<TopicPartition, Long> out = new TreeMap<>(ORDER);
    for (Iterator<Map.Entry<String, JsonNode>> it = root.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> topic = it.next();
      if (!topic.getValue().isObject()) {
        throw new FluvioException(ErrorCode.INVALID_REQUEST, "offset of topic %s must be an object: %s"
            .formatted(ReaderOptions.pyRepr(topic.getKey()), topic.getValue()));
      }
      for (Iterator<Map.Entry<String, JsonNode>> ps = topic.getValue().properties().iterator(); ps.hasNext(); ) {
        Map.Entry<String, JsonNode> part = ps.next();
        int index = ReaderOptions.partitionIndex(part.getKey());
        JsonNode offset = part.getValue();
        if (index < 0 || !offset.isIntegralNumber() || !offset.canConvertToLong() || offset.longValue() < 0) {
          throw new FluvioException(ErrorCode.INVALID_REQUEST, "bad offset entry %s/%s -> %s in a fluvio source offset"
              .formatted(topic.getKey(), part.getKey(), ReaderOptions.pyRepr(offset)));
        }
        out.put(new TopicPartition(topic.getKey(), index), offset.longValue());
      }
    }
    return new FluvioOffset(out);
  }

  /** Python's {@code json.dumps} of a str (ASCII only, with its escapes). */
  private static StringBuilder quote(StringBuilder out, String s) {
    out.append('"');
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20 || c > 0x7e) {
            out.append("\\u%04x".formatted((int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"');
  }

  private static int compareCodePoints(String a, String b) {
    return java.util.Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());
  }
}

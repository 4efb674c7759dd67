package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Batch and stream reader options parse as {@code datasource/options.py} parses them, messages too. */
class ReaderOptionsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void everyCaseParsesOrFailsAsInPython() {
    int checked = 0;
    for (JsonNode c : Vectors.load("reader_options.json").get("batch")) {
      Map<String, String> options = new LinkedHashMap<>();
      c.get("options").properties().forEach(e -> options.put(e.getKey(), e.getValue().asText()));
      String name = options.toString();
      if (c.has("error")) {
        String got;
        try {
          ReaderOptions.parseBatch(options);
          got = "accepted";
        } catch (FluvioException e) {
          got = e.toString();
        }
        assertEquals(c.get("error").asText(), got, name);
      } else {
        assertEquals(c.get("parsed").toString(), summary(ReaderOptions.parseBatch(options)).toString(), name);
      }
      checked++;
    }
    assertTrue(checked >= 40, "cases read: " + checked);
  }

  @Test
  void skipCorruptFramesIsKnownButOnlyFalseIsAccepted() {
    Map<String, String> options = new LinkedHashMap<>(Map.of("topic", "t", "endpoint", "h:1"));
    options.put("skipCorruptFrames", "false");
    assertEquals(List.of("t"), ReaderOptions.parseBatch(options).topics());
    options.put("skipCorruptFrames", "true");
    FluvioException refused =
        org.junit.jupiter.api.Assertions.assertThrows(
            FluvioException.class, () -> ReaderOptions.parseBatch(options));
    assertTrue(
        refused.getMessage().contains("'skipCorruptFrames' is not supported by the JVM connector"),
        refused.getMessage());
  }

  @Test
  void everyStreamCaseParsesOrFailsAsInPython() {
    int checked = 0;
    for (JsonNode c : Vectors.load("reader_options.json").get("stream")) {
      Map<String, String> options = new LinkedHashMap<>();
      c.get("options").properties().forEach(e -> options.put(e.getKey(), e.getValue().asText()));
      String name = options.toString();
      if (c.has("error")) {
        String got;
        try {
          StreamOptions.parse(options);
          got = "accepted";
        } catch (FluvioException e) {
          got = e.toString();
        }
        assertEquals(c.get("error").asText(), got, name);
      } else {
        StreamOptions parsed = StreamOptions.parse(options);
        ObjectNode summary = (ObjectNode) summary(parsed.read());
        summary.putNull("ending"); // a stream has none (Python: None)
        summary.put("max_records_per_trigger", parsed.maxRecordsPerTrigger());
        summary.put("min_records_per_trigger", parsed.minRecordsPerTrigger());
        summary.put("max_trigger_delay_ms", parsed.maxTriggerDelayMs());
        assertEquals(c.get("parsed").toString(), summary.toString(), name);
      }
      checked++;
    }
    assertTrue(checked >= 15, "cases read: " + checked);
  }

  private static JsonNode summary(ReaderOptions o) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("endpoint", o.endpoint().listed());
    out.put("topics", o.topics());
    out.put("partitions", o.partitions());
    out.put("starting", spec(o.starting()));
    out.put("ending", spec(o.ending()));
    out.put("isolation", o.isolation().wireName());
    out.put("include_headers", o.includeHeaders());
    out.put("fetch_max_bytes", o.fetchMaxBytes());
    out.put("fail_on_data_loss", o.failOnDataLoss());
    out.put("min_partitions", o.minPartitions());
    out.put("local_reads", o.localReads());
    if (o.topicPattern() != null) {
      out.put("topic_pattern", o.topicPattern());
    }
    if (o.assign() != null) {
      List<List<Object>> assign = new ArrayList<>();
      o.assign().forEach(a -> assign.add(List.of(a.topic(), a.partitions())));
      out.put("assign", assign);
    }
    return JSON.valueToTree(out);
  }

  private static Map<String, Object> spec(OffsetSpec s) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("default", s.defaultOffset());
    List<List<Object>> specific = new ArrayList<>();
    for (OffsetSpec.Specific e : s.specific()) {
      specific.add(List.of(e.topic(), e.partition(), e.offset()));
    }
    out.put("specific", specific);
    out.put("timestamp_ms", s.timestampMs());
    if (s.group() != null) {
      out.put("group", s.group());
    }
    if (!s.timestamps().isEmpty()) {
      List<List<Object>> times = new ArrayList<>();
      for (OffsetSpec.Specific e : s.timestamps()) {
        times.add(List.of(e.topic(), e.partition(), e.offset()));
      }
      out.put("timestamps", times);
    }
    if (!s.timestamps().isEmpty() || s.timestampMs() != null) {
      out.put("time_strategy", s.timeStrategy());
    }
    return out;
  }
}

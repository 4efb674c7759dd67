package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * Writer options and sink columns as {@code parse_writer_options} and {@code
 * sink_columns} decide them, messages too ({@code writer_options.json}).
 */
class WriterOptionsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNode VECTORS = Vectors.load("writer_options.json");

  @Test
  void everyOptionsCaseParsesOrFailsAsInPython() {
    int checked = 0;
    for (JsonNode c : VECTORS.get("writer")) {
      Map<String, String> options = new LinkedHashMap<>();
      c.get("options").properties().forEach(e -> options.put(e.getKey(), e.getValue().asText()));
      String got = outcome(() -> summary(WriterOptions.parse(options)));
      String expected = c.has("error") ? c.get("error").asText() : c.get("parsed").toString();
      assertEquals(expected, got, options.toString());
      checked++;
    }
    assertTrue(checked >= 15, "cases read: " + checked);
  }

  @Test
  void everySchemaCaseIsCheckedAsInPython() {
    int checked = 0;
    for (JsonNode c : VECTORS.get("sink_columns")) {
      StructType schema = (StructType) DataType.fromJson(c.get("schema").asText());
      boolean topicOption = c.get("topic_option").asBoolean();
      Boolean preserve = c.get("preserve_partitions").isNull() ? null : c.get("preserve_partitions").asBoolean();
      String got = outcome(() -> used(SinkColumns.of(schema, topicOption, preserve)));
      String expected = c.has("error") ? c.get("error").asText() : c.get("used").toString();
      assertEquals(expected, got, schema.simpleString());
      checked++;
    }
    assertTrue(checked >= 20, "cases read: " + checked);
  }

  @Test
  void typedTopicRefusalsSayWhatPythonSays() {
    int checked = 0;
    for (JsonNode c : VECTORS.get("typed_targets")) {
      java.util.List<String> columns = new java.util.ArrayList<>();
      c.get("columns").forEach(n -> columns.add(n.asText()));
      assertEquals(
          c.get("message").asText(),
          SinkColumns.typedTopicRefused(c.get("topic").asText(), columns, c.get("routed").asBoolean()));
      checked++;
    }
    assertTrue(checked >= 3, "cases read: " + checked);
  }

  private static String outcome(Supplier<JsonNode> run) {
    try {
      return run.get().toString();
    } catch (FluvioException e) {
      return e.toString();
    }
  }

  private static JsonNode summary(WriterOptions o) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("endpoint", o.endpoint().listed());
    out.put("topic", o.topic());
    out.put("compression", o.compression() == null ? null : o.compression().wireName());
    out.put("batch_size", o.batchSize());
    out.put("acks", o.acks());
    out.put("preserve_partitions", o.preservePartitions());
    out.put("merge_schema", o.mergeSchema());
    return JSON.valueToTree(out);
  }

  private static JsonNode used(SinkColumns s) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("key", s.key() >= 0);
    out.put("topic", s.topic() >= 0);
    out.put("partition", s.partition() >= 0);
    out.put("timestamp", s.timestamp() >= 0);
    out.put("headers", s.headers() >= 0);
    return JSON.valueToTree(out);
  }
}

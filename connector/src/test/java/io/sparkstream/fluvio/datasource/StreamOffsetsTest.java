package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.util.SerializableConfiguration;
import org.junit.jupiter.api.Test;

/**
 * Stream offsets and read limits against what the Python source computes (the expected
 * values were printed by {@code datasource/offsets.py} and {@code planning.py}).
 */
class StreamOffsetsTest {
  private static TopicPartition tp(String topic, int partition) {
    return new TopicPartition(topic, partition);
  }

  private static Map<TopicPartition, Long> map(Object... pairs) {
    Map<TopicPartition, Long> out = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      out.put((TopicPartition) pairs[i], ((Number) pairs[i + 1]).longValue());
    }
    return out;
  }

  @Test
  void jsonIsPythonsJsonDumpsText() {
    FluvioOffset offset = new FluvioOffset(
        map(tp("b", 0), 5, tp("b", 10), 1, tp("b", 2), 3, tp("a", 1), 0, tp("\u00e9", 0), 7));
    String python = "{\"a\": {\"1\": 0}, \"b\": {\"0\": 5, \"2\": 3, \"10\": 1}, \"\\u00e9\": {\"0\": 7}}";
    assertEquals(python, offset.json());
    assertEquals(python, FluvioOffset.parse(python).json());
    assertEquals(offset, FluvioOffset.parse("{\"b\":{\"10\":1,\"0\":5,\"2\":3},\"a\":{\"1\":0},\"\u00e9\":{\"0\":7}}"));
    assertEquals("{}", new FluvioOffset(Map.of()).json());
  }

  @Test
  void badOffsetsFailWithPythonsMessages() {
    String[][] rows = {
      {"[1]", "a fluvio source offset must be an object, got [1]"},
      {"{\"t\": {\"x\": 1}}", "bad offset entry t/x -> 1 in a fluvio source offset"},
      {"{\"t\": 3}", "offset of topic 't' must be an object: 3"},
      {"{\"t\": {\"0\": -1}}", "bad offset entry t/0 -> -1 in a fluvio source offset"},
    };
    for (String[] row : rows) {
      FluvioException e = assertThrows(FluvioException.class, () -> FluvioOffset.parse(row[0]));
      assertEquals(ErrorCode.INVALID_REQUEST, e.code());
      assertEquals(row[1], e.getMessage(), row[0]);
    }
  }

  @Test
  void budgetsSplitAsPythonsProrate() {
    assertEquals(
        map(tp("a", 0), 4, tp("a", 1), 3, tp("a", 2), 3),
        StreamLimits.prorate(10, map(tp("a", 0), 3, tp("a", 1), 3, tp("a", 2), 3)));
    assertEquals(
        map(tp("a", 0), 7, tp("a", 1), 0, tp("b", 0), 0),
        StreamLimits.prorate(7, map(tp("a", 0), 100, tp("a", 1), 1, tp("b", 0), 0)));
    // a/1 is new (missing from start: begins at 0).
    assertEquals(
        map(tp("a", 0), 22, tp("a", 1), 8),
        StreamLimits.limitRows(map(tp("a", 0), 5), map(tp("a", 0), 50, tp("a", 1), 20), 25));
    assertEquals(Map.of(tp("a", 0), 0L), StreamLimits.prorate(0, map(tp("a", 0), 0)));
  }

  @Test
  void behindLatestCountsWhatIsLeft() {
    Map<String, String> m = FluvioMicroBatchStream.behindLatest(
        map(tp("a", 0), 10, tp("a", 1), 4), map(tp("a", 0), 10, tp("a", 1), 8, tp("b", 0), 6));
    assertEquals(Map.of("minOffsetsBehindLatest", "0", "maxOffsetsBehindLatest", "6",
        "avgOffsetsBehindLatest", "3.3333333333333335"), m);
  }

  @Test
  void streamReadersAndPartitionsSerialize() throws Exception {
    ReaderOptions options = ReaderOptions.parseBatch(Map.of("endpoint", "127.0.0.1:9003", "topic", "t"));
    Object[] shipped = {
      new FluvioStreamPartition("t", 1, 42, true),
      new FluvioPartitionOffset("t", 1, 43),
      new FluvioStreamReaderFactory(options, ReadSchema.of(false), new SerializableConfiguration(new Configuration())),
      new FluvioContinuousReaderFactory(options, ReadSchema.of(false), new SerializableConfiguration(new Configuration())),
    };
    for (Object o : shipped) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
        out.writeObject(o);
      }
      try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
        Object back = in.readObject();
        assertEquals(o.getClass(), back.getClass());
        if (o instanceof Record) {
          assertEquals(o, back);
        }
      }
    }
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.protocol.FrameKind;
import io.sparkstream.fluvio.protocol.Frames;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** {@code PROGRESS_COMMIT} requests: built as Python builds them, sent to a loopback SC. */
class ProgressCommitTest {
  private static final JsonNode FRAMES = Vectors.load("protocol_frames.json").get("frames");

  private static JsonNode vector(String name) {
    for (JsonNode v : FRAMES) {
      if (v.get("name").asText().equals(name)) {
        return v;
      }
    }
    throw new AssertionError("no vector " + name);
  }

  private static Map<String, Long> offsets(JsonNode v) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (JsonNode o : v.get("meta").get("offsets")) {
      out.put(o.get("topic").asText() + "/" + o.get("partition").asInt(), o.get("offset").asLong());
    }
    return out;
  }

  @Test
  void requestsAreByteIdenticalToPythons() {
    for (String name : List.of("progress_commit", "progress_claim")) {
      JsonNode v = vector(name);
      Map<String, Object> meta = LeaderClient.progressCommitMeta(v.get("meta").get("group").asText(), offsets(v));
      byte[] built = Frames.encode(FrameKind.REQUEST, ApiKeys.PROGRESS_COMMIT,
          v.get("correlation_id").asLong(), meta, ByteBuffer.allocate(0), 0, 0);
      assertEquals(v.get("api_key").asInt(), ApiKeys.PROGRESS_COMMIT, name);
      assertEquals(v.get("bytes").asText(), Vectors.hex(built), name);
    }
  }

  @Test
  void theScSeesTheOffsetsAndItsSkippedPartitionsComeBack() throws Exception {
    List<Object> seen = new CopyOnWriteArrayList<>();
    try (FakePeer sc = new FakePeer(f -> {
          seen.add(Vectors.comparable(f.decodeMeta()));
          return Map.of("written", 1, "skipped", List.of(Map.of("topic", "gone", "partition", 3)));
        });
        LeaderClient client = new LeaderClient(sc.endpoint(), 5_000)) {
      Map<String, Long> offsets = new LinkedHashMap<>();
      offsets.put("orders/0", 7L);
      offsets.put("gone/3", 2L);
      assertEquals(List.of("gone/3"), client.commitProgress("q-1", offsets));
      assertEquals(List.of(ApiKeys.PROGRESS_COMMIT), sc.asked);
      Map<String, Object> expected = Map.of("group", "q-1", "offsets", List.of(
          Map.of("topic", "orders", "partition", 0L, "offset", 7L),
          Map.of("topic", "gone", "partition", 3L, "offset", 2L)));
      assertEquals(List.of(expected), seen);
    }
  }

  @Test
  void aRefusalArrivesTyped() throws Exception {
    try (FakePeer sc = new FakePeer(f -> new FakePeer.Error(115, "group 'm' has 1 member(s)"));
        LeaderClient client = new LeaderClient(sc.endpoint(), 5_000)) {
      FluvioException e = assertThrows(FluvioException.class, () -> client.commitProgress("m", Map.of()));
      assertEquals(ErrorCode.GROUP_NOT_EMPTY, e.code());
    }
  }
}

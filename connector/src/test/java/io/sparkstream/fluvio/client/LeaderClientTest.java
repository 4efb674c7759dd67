package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Leader routing against real loopback peers: an SC and two SPUs speaking the protocol. */
class LeaderClientTest {
  private static final Map<String, Object> OFFSETS = Map.of("log_start", 0, "leo", 9, "hw", 7);

  private static Map<String, Object> describe(int leader) {
    return Map.of(
        "topic", Map.of(),
        "partitions", List.of(Map.of("status", Map.of("leader", leader))),
        "revision", 1);
  }

  private static Map<String, Object> spus(FakePeer a, FakePeer b) {
    return Map.of(
        "spus",
        List.of(spu(1, a), spu(2, b)),
        "revision", 1);
  }

  private static Map<String, Object> spu(int id, FakePeer peer) {
    return spuAt(id, peer.endpoint());
  }

  private static Map<String, Object> spuAt(int id, Endpoint endpoint) {
    return Map.of(
        "spec",
        Map.of(
            "spuId", id,
            "publicEndpoint",
            Map.of("port", endpoint.port(), "ingress", List.of(Map.of("hostname", "127.0.0.1")))));
  }

  @Test
  void notLeaderRefreshesMetadataAndRetriesOnTheNewLeader() throws Exception {
    AtomicInteger describes = new AtomicInteger();
    try (FakePeer deposed = new FakePeer(f -> new FakePeer.Error(10, "spu 1 is not the leader of t/0"));
        FakePeer leader = new FakePeer(f -> OFFSETS)) {
      FakePeer sc =
          new FakePeer(
              f ->
                  f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC
                      // The first answer still names the deposed leader.
                      ? describe(describes.getAndIncrement() == 0 ? 1 : 2)
                      : spus(deposed, leader));
      try (sc; LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
        PartitionOffsets offsets = client.fetchOffsets("t", 0, null);
        assertEquals(new PartitionOffsets(0, 9, 7, -1), offsets);
        assertEquals(List.of(ApiKeys.FETCH_OFFSETS), deposed.asked);
        assertEquals(List.of(ApiKeys.FETCH_OFFSETS), leader.asked);
        assertEquals(2, describes.get());
      }
    }
  }

  @Test
  // A fetch that waits out its request timeout fails here (in a thread of its own: a
  // blocked socket read ignores interrupts).
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aFetchLeavesAHungLeaderOnceTheScReplacesItAndAsksTheSameOffset() throws Exception {
    // A hung leader: it listens (the kernel accepts the connection) but never reads or
    // replies, as a SIGSTOPped SPU.
    AtomicInteger describes = new AtomicInteger();
    List<Object> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (java.net.ServerSocket hung = new java.net.ServerSocket(0, 16, java.net.InetAddress.getLoopbackAddress());
        FakePeer leader =
            new FakePeer(
                f -> {
                  asked.add(((Number) f.decodeMeta().get("offset")).longValue());
                  return OFFSETS;
                })) {
      Endpoint stopped = new Endpoint("127.0.0.1", hung.getLocalPort());
      FakePeer sc =
          new FakePeer(
              f ->
                  f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC
                      // The SC names the hung SPU until its third answer (the watch's second).
                      ? describe(describes.getAndIncrement() < 2 ? 1 : 2)
                      : Map.of("spus", List.of(spuAt(1, stopped), spu(2, leader)), "revision", 1));
      // A request timeout above the test's: only the watch can move the fetch in time.
      try (sc; LeaderClient client = new LeaderClient(sc.endpoint(), 120_000)) {
        FetchResult fetched = client.fetch("t", 0, 42, 1024, Isolation.COMMITTED);
        assertEquals(new PartitionOffsets(0, 9, 7, -1), fetched.offsets());
        assertEquals(List.of(42L), asked); // once, at the offset the hung leader was asked
        assertTrue(describes.get() >= 3, "the SC was asked while the fetch waited");
      }
    }
  }

  @Test
  void aNonRetriableErrorIsRaisedTypedAtOnce() throws Exception {
    try (FakePeer spu = new FakePeer(f -> new FakePeer.Error(6, "offset 99 is past the end"));
        FakePeer sc =
            new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(1) : spus(spu, spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
      FluvioException e = assertThrows(FluvioException.class, () -> client.fetchOffsets("t", 0, null));
      assertEquals(ErrorCode.OFFSET_OUT_OF_RANGE, e.code());
      assertEquals("OffsetOutOfRangeError: offset 99 is past the end", e.toString());
      assertEquals(1, spu.asked.size());
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void aTypedTopicsMetadataCarriesItsSchema() throws Exception {
    Map<String, Object> spec =
        new com.fasterxml.jackson.databind.ObjectMapper()
            .convertValue(io.sparkstream.fluvio.Vectors.load("typed_frames.json").get("topic_schema"), Map.class);
    Map<String, Object> typed =
        Map.of(
            "topic", Map.of("spec", Map.of("topicSchema", spec)),
            "partitions", List.of(Map.of("status", Map.of("leader", 1))),
            "revision", 1);
    try (FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.LIST_SPUS ? Map.of("spus", List.of()) : typed);
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
      Metadata metadata = client.metadata("ty");
      assertEquals(2, metadata.schema().version());
      assertEquals("id", metadata.schema().names().get(0));
    }
    Map<String, Object> broken =
        Map.of(
            "topic", Map.of("spec", Map.of("topicSchema", Map.of("version", 2))),
            "partitions", List.of(Map.of("status", Map.of("leader", 1))),
            "revision", 1);
    try (FakePeer sc = new FakePeer(f -> broken);
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
      FluvioException e = assertThrows(FluvioException.class, () -> client.metadata("ty"));
      assertEquals(ErrorCode.INVALID_REQUEST, e.code());
      assertTrue(e.getMessage().startsWith("topic spec: malformed topicSchema"), e.getMessage());
    }
  }

  @Test
  void anUnknownTopicFromTheScIsTyped() throws Exception {
    try (FakePeer sc = new FakePeer(f -> new FakePeer.Error(8, "topic nope does not exist"));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
      FluvioException e = assertThrows(FluvioException.class, () -> client.metadata("nope"));
      assertEquals(ErrorCode.UNKNOWN_TOPIC, e.code());
    }
  }

  @Test
  void apiVersionsAreReadAndChecked() throws Exception {
    try (FakePeer peer = new FakePeer(f -> Map.of("apis", List.of(List.of(1, 0, 0), List.of(3002, 0, 2))));
        Connection c = Connection.open(peer.endpoint(), 5_000)) {
      assertEquals(List.of(1, 3002), List.copyOf(c.apiVersions().keySet()));
      c.requireVersion(ApiKeys.FETCH, 2);
      FluvioException e = assertThrows(FluvioException.class, () -> c.requireVersion(ApiKeys.FETCH, 3));
      assertEquals(ErrorCode.UNSUPPORTED_VERSION, e.code());
      assertEquals(peer.endpoint() + " does not accept version 3 of api 3002 (it accepts 0..2)", e.getMessage());
    }
  }

  @Test
  void anUnreachableScIsAConnectionError() throws Exception {
    // A port held by a bound socket that does not listen: nothing else can take it while
    // the test runs (a port merely closed can be reused by any process meanwhile).
    try (java.net.Socket holder = new java.net.Socket()) {
      holder.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
      Endpoint closed = new Endpoint("127.0.0.1", holder.getLocalPort());
      try (LeaderClient client = new LeaderClient(closed, 2_000)) {
        FluvioException e = assertThrows(FluvioException.class, () -> client.metadata("t"));
        assertEquals(ErrorCode.CONNECTION_CLOSED, e.code());
      }
    }
  }
}

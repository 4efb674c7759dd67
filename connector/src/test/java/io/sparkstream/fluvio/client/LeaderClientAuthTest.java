package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client-token handshake against real loopback peers: a {@link LeaderClient} given a
 * token presents it ({@code AUTHENTICATE}) first on every connection it opens, to the SC
 * and to the leader; a refused token arrives as the typed {@code AuthenticationError}.
 */
class LeaderClientAuthTest {
  private static final Map<String, Object> OFFSETS = Map.of("log_start", 0, "leo", 9, "hw", 7);

  private static FakePeer sc(FakePeer spu, List<Object> tokens) throws Exception {
    return new FakePeer(
        f -> {
          int api = f.header().apiKey();
          if (api == ApiKeys.AUTHENTICATE) {
            tokens.add(f.decodeMeta().get("token"));
            return Map.of("principal", "app", "required", true);
          }
          if (api == ApiKeys.DESCRIBE_TOPIC) {
            return Map.of(
                "topic", Map.of(),
                "partitions", List.of(Map.of("status", Map.of("leader", 1))),
                "revision", 1);
          }
          return Map.of(
              "spus",
              List.of(Map.of("spec", Map.of(
                  "spuId", 1,
                  "publicEndpoint",
                  Map.of("port", spu.endpoint().port(),
                      "ingress", List.of(Map.of("hostname", "127.0.0.1")))))),
              "revision", 1);
        });
  }

  @Test
  void theTokenIsPresentedFirstOnEveryConnection() throws Exception {
    List<Object> tokens = new CopyOnWriteArrayList<>();
    try (FakePeer spu =
            new FakePeer(
                f -> {
                  if (f.header().apiKey() == ApiKeys.AUTHENTICATE) {
                    tokens.add(f.decodeMeta().get("token"));
                    return Map.of("principal", "app", "required", true);
                  }
                  return OFFSETS;
                });
        FakePeer sc = sc(spu, tokens);
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000, "fv1.claims.mac")) {
      assertEquals(new PartitionOffsets(0, 9, 7, -1), client.fetchOffsets("t", 0, null));
      assertEquals(ApiKeys.AUTHENTICATE, sc.asked.get(0));
      assertEquals(List.of(ApiKeys.AUTHENTICATE, ApiKeys.FETCH_OFFSETS), spu.asked);
      assertEquals(List.of("fv1.claims.mac", "fv1.claims.mac"), tokens);
    }
  }

  @Test
  void withoutATokenNothingIsPresented() throws Exception {
    List<Object> tokens = new CopyOnWriteArrayList<>();
    try (FakePeer spu = new FakePeer(f -> OFFSETS);
        FakePeer sc = sc(spu, tokens);
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000)) {
      client.fetchOffsets("t", 0, null);
      assertEquals(List.of(ApiKeys.FETCH_OFFSETS), spu.asked);
      assertEquals(List.of(), tokens);
    }
  }

  @Test
  void aRefusedTokenIsTheTypedErrorAtOnce() throws Exception {
    try (FakePeer sc =
            new FakePeer(f -> new FakePeer.Error(120, "the token is not signed by this cluster's key"));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000, "fv1.bad.mac")) {
      FluvioException e = assertThrows(FluvioException.class, () -> client.fetchOffsets("t", 0, null));
      assertEquals(ErrorCode.AUTHENTICATION, e.code());
      assertEquals(
          "AuthenticationError: the token is not signed by this cluster's key", e.toString());
      assertEquals(List.of(ApiKeys.AUTHENTICATE), sc.asked);
    }
  }

  @Test
  // Waiting out the 120 s request timeout would fail here: only the watch can move on.
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaderThatHangsOnTheTokenIsGivenUpOnceTheScReplacesIt() throws Exception {
    // A hung leader: the kernel accepts the connection, nothing answers the token.
    AtomicInteger describes = new AtomicInteger();
    try (ServerSocket hung = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        FakePeer leader =
            new FakePeer(
                f -> f.header().apiKey() == ApiKeys.AUTHENTICATE
                    ? Map.of("principal", "app", "required", true)
                    : OFFSETS)) {
      FakePeer sc =
          new FakePeer(
              f -> {
                int api = f.header().apiKey();
                if (api == ApiKeys.AUTHENTICATE) {
                  return Map.of("principal", "app", "required", true);
                }
                if (api == ApiKeys.DESCRIBE_TOPIC) {
                  // The hung SPU 1 leads until the third answer (the watch's second).
                  int leaderId = describes.getAndIncrement() < 2 ? 1 : 2;
                  return Map.of(
                      "topic", Map.of(),
                      "partitions", List.of(Map.of("status", Map.of("leader", leaderId))),
                      "revision", 1);
                }
                return Map.of(
                    "spus", List.of(spuAt(1, hung.getLocalPort()), spuAt(2, leader.endpoint().port())),
                    "revision", 1);
              });
      try (sc; LeaderClient client = new LeaderClient(sc.endpoint(), 120_000, "fv1.claims.mac")) {
        assertEquals(new PartitionOffsets(0, 9, 7, -1), client.fetchOffsets("t", 0, null));
        assertEquals(List.of(ApiKeys.AUTHENTICATE, ApiKeys.FETCH_OFFSETS), leader.asked);
        assertTrue(describes.get() >= 3, "the SC was asked while the token waited");
      }
    }
  }

  private static Map<String, Object> spuAt(int id, int port) {
    return Map.of(
        "spec",
        Map.of(
            "spuId", id,
            "publicEndpoint", Map.of("port", port, "ingress", List.of(Map.of("hostname", "127.0.0.1")))));
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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
 * A stream from a hung leader (a real loopback socket that listens but never reads or
 * pushes, as a SIGSTOPped SPU): it asks its abandon check while nothing comes and ends
 * with the retriable {@code NOT_LEADER} once the check says the leader was replaced. With
 * a client token, the token is presented and answered before the stream is asked for.
 */
class FetchStreamTest {
  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aStreamFromAHungLeaderEndsOnceTheLeaderIsReplaced() throws Exception {
    AtomicInteger checks = new AtomicInteger();
    try (ServerSocket hung = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        FetchStream stream =
            FetchStream.open(
                new Endpoint("127.0.0.1", hung.getLocalPort()), "t", 0, 42, 1024, Isolation.COMMITTED, 5_000,
                null, () -> checks.incrementAndGet() >= 3, 20)) {
      int nothing = 0;
      FluvioException e = null;
      while (e == null) {
        try {
          assertNull(stream.poll(10)); // the leader sends nothing
          nothing++;
        } catch (FluvioException raised) {
          e = raised;
        }
      }
      assertEquals(ErrorCode.NOT_LEADER, e.code());
      assertTrue(e.retriable());
      assertEquals(3, checks.get()); // asked until it said replaced, then not again
      assertTrue(nothing >= 2, "polls that returned nothing while the check said no: " + nothing);
      FluvioException closed = assertThrows(FluvioException.class, () -> stream.poll(10));
      assertEquals(ErrorCode.CONNECTION_CLOSED, closed.code());
    }
  }

  @Test
  void aStreamWithoutAWatchNeverAsks() throws Exception {
    try (ServerSocket hung = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        FetchStream stream =
            FetchStream.open(
                new Endpoint("127.0.0.1", hung.getLocalPort()), "t", 0, 0, 1024, Isolation.COMMITTED, 5_000,
                null, null, 0)) {
      for (int i = 0; i < 5; i++) {
        assertNull(stream.poll(5));
      }
    }
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void theTokenIsAnsweredBeforeTheStreamIsAskedFor() throws Exception {
    List<Object> tokens = new CopyOnWriteArrayList<>();
    try (FakePeer leader =
            new FakePeer(
                f -> {
                  if (f.header().apiKey() == ApiKeys.AUTHENTICATE) {
                    tokens.add(f.decodeMeta().get("token"));
                  }
                  return Map.of("principal", "app", "required", true);
                });
        FetchStream stream =
            FetchStream.open(
                leader.endpoint(), "t", 0, 0, 1024, Isolation.COMMITTED, 5_000, "fv1.claims.mac", null, 0)) {
      assertEquals(List.of("fv1.claims.mac"), tokens); // answered before open returned
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (leader.asked.size() < 3 && System.nanoTime() < deadline) {
        assertNull(stream.poll(5));
      }
      assertEquals(List.of(ApiKeys.AUTHENTICATE, ApiKeys.STREAM_FETCH, ApiKeys.STREAM_FETCH), leader.asked);
    }
  }

  @Test
  void aRefusedTokenFailsTheOpenWithItsTypedErrorAndAsksNoStream() throws Exception {
    try (FakePeer leader = new FakePeer(f -> new FakePeer.Error(120, "the token has expired"))) {
      FluvioException e =
          assertThrows(
              FluvioException.class,
              () -> FetchStream.open(
                  leader.endpoint(), "t", 0, 0, 1024, Isolation.COMMITTED, 5_000, "fv1.old.mac", null, 0));
      assertEquals(ErrorCode.AUTHENTICATION, e.code());
      assertEquals("AuthenticationError: the token has expired", e.toString());
      assertEquals(List.of(ApiKeys.AUTHENTICATE), leader.asked);
    }
  }

  @Test
  // Waiting out the 120 s bound would fail here: only the watch can end the open in time.
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aHungLeaderIsGivenUpWhileTheTokenWaitsForItsAnswer() throws Exception {
    AtomicInteger checks = new AtomicInteger();
    try (ServerSocket hung = new ServerSocket(0, 16, InetAddress.getLoopbackAddress())) {
      FluvioException e =
          assertThrows(
              FluvioException.class,
              () -> FetchStream.open(
                  new Endpoint("127.0.0.1", hung.getLocalPort()), "t", 0, 0, 1024, Isolation.COMMITTED, 120_000,
                  "fv1.claims.mac", () -> checks.incrementAndGet() >= 3, 20));
      assertEquals(ErrorCode.NOT_LEADER, e.code());
      assertTrue(e.retriable());
      assertEquals(3, checks.get());
    }
  }
}

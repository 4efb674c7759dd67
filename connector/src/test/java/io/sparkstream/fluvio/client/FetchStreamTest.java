package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A stream from a hung leader (a real loopback socket that listens but never reads or
 * pushes, as a SIGSTOPped SPU): it asks its abandon check while nothing comes and ends
 * with the retriable {@code NOT_LEADER} once the check says the leader was replaced.
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
                () -> checks.incrementAndGet() >= 3, 20)) {
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
                null, 0)) {
      for (int i = 0; i < 5; i++) {
        assertNull(stream.poll(5));
      }
    }
  }
}

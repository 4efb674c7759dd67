package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** Opening connections: what a client does when nothing listens. */
class ConnectionTest {
  @Test
  void aSocketThatReachedItselfIsRefused() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    // bound to the very port it connects to, with no listener: TCP's simultaneous open
    // connects the socket to itself, as a kernel-picked ephemeral port sometimes does
    Socket socket = new Socket();
    socket.setReuseAddress(true);
    socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    FluvioException e =
        assertThrows(
            FluvioException.class,
            () -> Connection.open(new Endpoint("127.0.0.1", port), 2_000, socket));
    assertEquals(ErrorCode.CONNECTION_CLOSED, e.code());
    assertTrue(e.getMessage().contains("reached itself"), e.getMessage());
    assertTrue(socket.isClosed());
  }
}

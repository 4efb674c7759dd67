package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** TLS settings: option checks, file errors, and a TLS client meeting a plaintext port. */
class TlsSettingsTest {
  @Test
  void noOptionsMeansPlaintextAndACertNeedsItsKey() {
    assertNull(TlsSettings.of(null, null, null));
    FluvioException e = assertThrows(FluvioException.class, () -> TlsSettings.of("/ca.pem", "/c.pem", null));
    assertEquals(ErrorCode.INVALID_CONFIG, e.code());
    assertTrue(e.getMessage().contains("needs both 'cert' and 'key'"), e.getMessage());
  }

  @Test
  void aMissingFileIsNamed() {
    TlsSettings settings = TlsSettings.of("/nonexistent/ca.pem", null, null);
    FluvioException e = assertThrows(FluvioException.class, settings::context);
    assertEquals(ErrorCode.INVALID_CONFIG, e.code());
    assertTrue(e.getMessage().contains("'ca' file /nonexistent/ca.pem does not exist"), e.getMessage());
  }

  @Test
  void anEndpointKeepsItsTlsThroughSerialization() throws Exception {
    Endpoint endpoint = new Endpoint("127.0.0.1", 9003, TlsSettings.of("/ca.pem", null, null));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(endpoint);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      assertEquals(endpoint, in.readObject());
    }
    assertTrue(endpoint.sameAddress(new Endpoint("127.0.0.1", 9003)));
  }

  @Test
  void aTlsClientOnAPlaintextPortFailsTypedAndQuickly() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread peer = new Thread(() -> {
        try (Socket s = server.accept()) {
          OutputStream out = s.getOutputStream();
          out.write("plaintext, not TLS\n".repeat(8).getBytes(StandardCharsets.US_ASCII));
          out.flush();
          s.getInputStream().read(new byte[4096]);
        } catch (Exception ignored) {
          // the client hung up
        }
      });
      peer.start();
      // TLS trusting the JVM's default CAs: the handshake fails before any trust check
      Endpoint endpoint = new Endpoint("127.0.0.1", server.getLocalPort(), new TlsSettings(null, null, null));
      FluvioException e = assertThrows(FluvioException.class, () -> Connection.open(endpoint, 10_000));
      assertEquals(ErrorCode.TLS, e.code());
      assertTrue(e.getMessage().contains("over TLS"), e.getMessage());
      peer.join(10_000);
    }
  }
}

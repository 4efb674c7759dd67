package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.protocol.Frame;
import io.sparkstream.fluvio.protocol.FrameDecoder;
import io.sparkstream.fluvio.protocol.FrameKind;
import io.sparkstream.fluvio.protocol.Frames;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A real TCP peer on loopback that speaks the frame protocol and answers each request
 * with what {@code answer} returns: a meta map for a response, or an {@link Error} for an
 * error frame. It records the api keys it was asked, so a test sees the client's moves.
 */
final class FakePeer implements AutoCloseable {
  /** An error reply. */
  record Error(int code, String message) {}

  private final ServerSocket server;
  private final Function<Frame, Object> answer;
  final List<Integer> asked = new CopyOnWriteArrayList<>();
  private final Thread thread;

  FakePeer(Function<Frame, Object> answer) throws IOException {
    this.server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
    this.answer = answer;
    this.thread = new Thread(this::serve, "fake-peer");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  Endpoint endpoint() {
    return new Endpoint("127.0.0.1", server.getLocalPort());
  }

  private void serve() {
    while (!server.isClosed()) {
      try (Socket s = server.accept()) {
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        FrameDecoder decoder = new FrameDecoder();
        byte[] buf = new byte[65536];
        int n;
        while ((n = in.read(buf)) > 0) {
          decoder.feed(ByteBuffer.wrap(buf, 0, n));
          for (Frame f = decoder.next(); f != null; f = decoder.next()) {
            asked.add(f.header().apiKey());
            Object reply = answer.apply(f);
            byte[] bytes =
                reply instanceof Error e
                    ? Frames.encode(FrameKind.ERROR, f.header().apiKey(), f.header().correlationId(),
                        Map.of("code", e.code(), "message", e.message()), ByteBuffer.allocate(0), 0, 0)
                    : Frames.encode(FrameKind.RESPONSE, f.header().apiKey(), f.header().correlationId(),
                        castMap(reply), ByteBuffer.allocate(0), 0, 0);
            out.write(bytes);
            out.flush();
          }
        }
      } catch (IOException e) {
        // the client went away or the peer closed: serve the next connection, if any
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, ?> castMap(Object o) {
    return (Map<String, ?>) o;
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}

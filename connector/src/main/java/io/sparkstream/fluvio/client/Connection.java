package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.protocol.Frame;
import io.sparkstream.fluvio.protocol.FrameDecoder;
import io.sparkstream.fluvio.protocol.FrameKind;
import io.sparkstream.fluvio.protocol.Frames;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * One blocking connection to a peer (SC or SPU) that sends a request and reads its reply.
 *
 * <p>The Python client multiplexes many requests over one connection with a reader task;
 * a Spark task reads one partition at a time, so here one request is in flight per
 * connection ({@code request} is synchronized) and frames of other correlation ids (none
 * are expected) are skipped. A reply of kind {@code ERROR} becomes the typed {@link
 * FluvioException} of its code, as in Python; a closed socket or a timeout are {@code
 * CONNECTION_CLOSED} and {@code REQUEST_TIMEOUT}, both retriable. After any I/O error the
 * connection is closed and must be replaced.
 */
public final class Connection implements Closeable {
  private final Endpoint endpoint;
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final FrameDecoder decoder = new FrameDecoder();
  private final byte[] readBuffer = new byte[256 * 1024];
  private long nextCorrelationId = 1;
  private boolean closed;

  private Connection(Endpoint endpoint, Socket socket) throws IOException {
    // Socket timeouts set on the TCP socket hold for the TLS socket layered on it.
    this.endpoint = endpoint;
    this.socket = socket;
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
  }

  /**
   * Connect to a peer.
   *
   * @param endpoint where
   * @param timeoutMs bound on connecting and on each request
   * @return the connection
   * @throws FluvioException {@code CONNECTION_CLOSED}: the peer cannot be reached
   */
  public static Connection open(Endpoint endpoint, int timeoutMs) {
    return open(endpoint, timeoutMs, new Socket());
  }

  /**
   * Connect {@code socket} (unconnected, perhaps bound) to a peer. A socket that reached
   * itself (TCP's simultaneous open, when nothing listens on a loopback port in the
   * ephemeral range and the kernel picks that very port for the client) is refused: it
   * would read its own requests back as replies.
   */
  static Connection open(Endpoint endpoint, int timeoutMs, Socket socket) {
    try {
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress(endpoint.host(), endpoint.port()), timeoutMs);
      if (socket.getLocalSocketAddress().equals(socket.getRemoteSocketAddress())) {
        throw new IOException("nothing listens there (the connection reached itself)");
      }
      socket.setSoTimeout(timeoutMs);
      Socket wire = endpoint.tls() == null ? socket : endpoint.tls().wrap(socket, endpoint);
      return new Connection(endpoint, wire);
    } catch (FluvioException e) {
      closeQuietly(socket);
      throw e;
    } catch (IOException e) {
      closeQuietly(socket);
      throw new FluvioException(
          ErrorCode.CONNECTION_CLOSED, "cannot connect to %s: %s".formatted(endpoint, e), e);
    }
  }

  /** The peer's address. */
  public Endpoint endpoint() {
    return endpoint;
  }

  /** True once closed (by the caller or after an I/O error). */
  public synchronized boolean isClosed() {
    return closed;
  }

  /**
   * Send a request and wait for its reply.
   *
   * @param apiKey the api
   * @param version the api version of {@code meta}'s layout
   * @param meta the request fields
   * @return the reply frame (kind {@code RESPONSE})
   * @throws FluvioException the server's typed error, or {@code CONNECTION_CLOSED} /
   *     {@code REQUEST_TIMEOUT}
   */
  public Frame request(int apiKey, int version, Map<String, ?> meta) {
    return request(apiKey, version, meta, ByteBuffer.allocate(0));
  }

  /**
   * Send a request with a data tail (the batch frames of a {@code PRODUCE}) and wait for
   * its reply.
   *
   * @param apiKey the api
   * @param version the api version of {@code meta}'s layout
   * @param meta the request fields
   * @param tail the bytes after the meta
   * @return the reply frame (kind {@code RESPONSE})
   * @throws FluvioException as {@link #request(int, int, Map)}
   */
  public synchronized Frame request(int apiKey, int version, Map<String, ?> meta, ByteBuffer tail) {
    return request(apiKey, version, meta, tail, null, 0);
  }

  /**
   * Send a request and wait for its reply, asking {@code abandon} every {@code pollMs}
   * while no reply has come: when it answers true the request is given up (the connection
   * is closed, as its reply can no longer be told apart) with {@code NOT_LEADER}, a
   * retriable error. A producer uses it to fail over from a hung leader as soon as the
   * metadata replaces it, not after its request timeout.
   *
   * @param apiKey the api
   * @param version the api version of {@code meta}'s layout
   * @param meta the request fields
   * @param tail the bytes after the meta
   * @param abandon asked while waiting; null: wait out the timeout
   * @param pollMs how often {@code abandon} is asked (below the request timeout)
   * @return the reply frame (kind {@code RESPONSE})
   * @throws FluvioException {@code NOT_LEADER} when abandoned, else as {@link
   *     #request(int, int, Map)}
   */
  public synchronized Frame request(
      int apiKey, int version, Map<String, ?> meta, ByteBuffer tail, BooleanSupplier abandon, int pollMs) {
    if (closed) {
      throw new FluvioException(ErrorCode.CONNECTION_CLOSED, "connection to %s is closed".formatted(endpoint));
    }
    long cid = nextCorrelationId++;
    byte[] frame =
        Frames.encode(FrameKind.REQUEST, apiKey, cid, meta, tail, version, 0);
    int restoreMs = 0;
    try {
      out.write(frame);
      out.flush();
      int timeoutMs = socket.getSoTimeout();
      long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
      boolean polling = abandon != null && pollMs > 0 && timeoutMs > pollMs;
      if (polling) {
        restoreMs = timeoutMs;
        socket.setSoTimeout(pollMs);
      }
      while (true) {
        Frame reply = decoder.next();
        if (reply == null) {
          int n;
          try {
            n = in.read(readBuffer);
          } catch (SocketTimeoutException e) {
            if (!polling || System.nanoTime() >= deadline) {
              throw e;
            }
            if (abandon.getAsBoolean()) {
              close();
              throw new FluvioException(
                  ErrorCode.NOT_LEADER,
                  "%s was given up after the metadata replaced that leader while api %d was in flight"
                      .formatted(endpoint, apiKey));
            }
            continue;
          }
          if (n < 0) {
            throw new IOException("the peer closed the connection");
          }
          decoder.feed(ByteBuffer.wrap(readBuffer, 0, n));
          continue;
        }
        if (reply.header().correlationId() == 0 && reply.header().kind() == FrameKind.ERROR) {
          throw errorOf(reply); // connection-level error: the peer is closing
        }
        if (reply.header().correlationId() != cid) {
          continue;
        }
        if (reply.header().kind() == FrameKind.ERROR) {
          throw errorOf(reply);
        }
        if (reply.header().kind() != FrameKind.RESPONSE) {
          throw new IOException("the peer sent a %s frame as a reply".formatted(reply.header().kind()));
        }
        return reply;
      }
    } catch (SocketTimeoutException e) {
      close();
      throw new FluvioException(
          ErrorCode.REQUEST_TIMEOUT, "no reply from %s to api %d in time".formatted(endpoint, apiKey), e);
    } catch (IOException e) {
      close();
      throw new FluvioException(
          ErrorCode.CONNECTION_CLOSED, "connection to %s failed: %s".formatted(endpoint, e.getMessage()), e);
    } finally {
      if (restoreMs > 0 && !closed) {
        try {
          socket.setSoTimeout(restoreMs);  // the next request waits the full timeout again
        } catch (IOException e) {
          close();
        }
      }
    }
  }

  /**
   * Present a client token ({@code AUTHENTICATE}) for the rest of the connection: a cluster
   * with auth on checks every later request against its grants; one with auth off accepts
   * any token.
   *
   * @param token the token ({@code fv1.<claims>.<mac>}, made by {@code fluvio token create})
   * @throws FluvioException {@code AUTHENTICATION}: the peer refused the token; or as
   *     {@link #request}
   */
  public void authenticate(String token) {
    authenticate(token, null, 0);
  }

  /**
   * {@link #authenticate(String)}, asking {@code abandon} every {@code pollMs} while the
   * answer has not come, as {@link #request(int, int, Map, ByteBuffer, BooleanSupplier, int)}.
   *
   * @param token the token
   * @param abandon true gives the request up with {@code NOT_LEADER}; null: never asked
   * @param pollMs how often {@code abandon} is asked
   * @throws FluvioException as {@link #authenticate(String)}; {@code NOT_LEADER} when abandoned
   */
  public void authenticate(String token, BooleanSupplier abandon, int pollMs) {
    request(ApiKeys.AUTHENTICATE, 0, Map.of("token", token), ByteBuffer.allocate(0), abandon, pollMs);
  }

  /**
   * The api versions the peer accepts ({@code API_VERSIONS}, answered by every server).
   *
   * @return version range {@code [min, max]} by api key
   * @throws FluvioException as {@link #request}
   */
  public Map<Integer, int[]> apiVersions() {
    Object apis = request(ApiKeys.API_VERSIONS, 0, Map.of()).decodeMeta().get("apis");
    Map<Integer, int[]> out = new java.util.TreeMap<>();
    if (apis instanceof java.util.List<?> list) {
      for (Object entry : list) {
        if (entry instanceof java.util.List<?> t && t.size() == 3) {
          out.put(
              ((Number) t.get(0)).intValue(),
              new int[] {((Number) t.get(1)).intValue(), ((Number) t.get(2)).intValue()});
        }
      }
    }
    return out;
  }

  /**
   * Check that the peer accepts {@code version} of {@code apiKey}, before relying on it.
   *
   * @param apiKey the api
   * @param version the version this client would send
   * @throws FluvioException {@code UNSUPPORTED_VERSION}, naming the api and what the peer
   *     accepts
   */
  public void requireVersion(int apiKey, int version) {
    int[] range = apiVersions().get(apiKey);
    if (range == null || version < range[0] || version > range[1]) {
      throw new FluvioException(
          ErrorCode.UNSUPPORTED_VERSION,
          "%s does not accept version %d of api %d (it accepts %s)"
              .formatted(endpoint, version, apiKey,
                  range == null ? "none" : range[0] + ".." + range[1]));
    }
  }

  private static FluvioException errorOf(Frame reply) {
    Map<String, Object> meta = reply.decodeMeta();
    Object code = meta.get("code");
    Object message = meta.get("message");
    return FluvioException.forCode(
        code instanceof Number n ? n.intValue() : ErrorCode.FLUVIO.code(),
        message == null ? "" : message.toString());
  }

  @Override
  public synchronized void close() {
    closed = true;
    closeQuietly(socket);
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing: nothing left to do with the error
    }
  }
}

package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.protocol.Frame;
import io.sparkstream.fluvio.protocol.FrameDecoder;
import io.sparkstream.fluvio.protocol.FrameHeader;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * One {@code STREAM_FETCH} stream from a partition leader, on its own socket (the Python
 * client's {@code Connection.stream}, docs/protocol.md "Streams").
 *
 * <p>Theory of operation: the request goes out flagged {@code STREAM}, followed by {@code
 * CREDIT {"credit": WINDOW}}; the leader pushes one {@code PUSH} per batch of new frames
 * (or of moved offsets), never more than the credit granted. Each push taken here counts,
 * and a {@code CREDIT} for the taken ones goes back after every {@code WINDOW / 2}, so at
 * most {@code WINDOW} pushes wait unread. {@link #poll} waits up to a bound for the next
 * push and returns null when none came, so a caller can check its own deadline or close
 * flag between waits. {@code ERROR} becomes the typed exception of its code; {@code END} or
 * a closed socket is {@code CONNECTION_CLOSED} (retriable: the caller reopens at its next
 * offset, on the leader of the moment). A hung leader sends nothing and closes nothing, so
 * while no push comes the stream asks its {@code abandon} check (the SC's metadata, {@link
 * LeaderClient#stream}) every {@code watchMs}; once it says the leader was replaced the
 * stream ends with the retriable {@code NOT_LEADER}, as a request in flight does ({@link
 * Connection#request(int, int, Map, ByteBuffer, java.util.function.BooleanSupplier, int)}).
 */
public final class FetchStream implements Closeable {
  /** Pushes granted at once, as Python's default. */
  public static final int WINDOW = 16;

  private static final long CORRELATION_ID = 1;
  private static final long AUTHENTICATE_ID = 2;

  private final Endpoint leader;
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final FrameDecoder decoder = new FrameDecoder();
  private final byte[] readBuffer = new byte[256 * 1024];
  private final BooleanSupplier abandon;
  private final long watchNanos;
  private long lastHeard = System.nanoTime();
  private int taken;
  private boolean closed;

  private FetchStream(Endpoint leader, Socket socket, BooleanSupplier abandon, int watchMs) throws IOException {
    this.leader = leader;
    this.socket = socket;
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
    this.abandon = abandon;
    this.watchNanos = watchMs * 1_000_000L;
  }

  /**
   * Open a stream of one partition's frames from {@code offset} on.
   *
   * @param leader the partition leader's public endpoint
   * @param topic the topic
   * @param partition the partition
   * @param offset the first offset wanted (the first push starts at the frame holding it)
   * @param maxBytes soft limit on the frames of one push
   * @param isolation committed (up to HW) or uncommitted (up to LEO)
   * @param timeoutMs bound on connecting
   * @param token the client token presented ({@code AUTHENTICATE}) before the stream is
   *     asked for, as every connection of a cluster with auth on must; null: none
   * @param abandon asked while no push comes: true ends the stream ({@code NOT_LEADER});
   *     null: never
   * @param watchMs how long without a push before {@code abandon} is asked (again)
   * @return the open stream
   * @throws FluvioException {@code CONNECTION_CLOSED}: the leader cannot be reached; the
   *     typed error the leader refused the token with; {@code REQUEST_TIMEOUT}: no answer
   *     to the token within {@code timeoutMs}; {@code NOT_LEADER}: {@code abandon} said
   *     the leader was replaced while the token waited for its answer
   */
  public static FetchStream open(
      Endpoint leader, String topic, int partition, long offset, int maxBytes, Isolation isolation, int timeoutMs,
      String token, BooleanSupplier abandon, int watchMs) {
    Socket socket = new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress(leader.host(), leader.port()), timeoutMs);
      socket.setSoTimeout(timeoutMs);  // bounds the TLS handshake; reads set their own wait
      Socket wire = leader.tls() == null ? socket : leader.tls().wrap(socket, leader);
      FetchStream stream = new FetchStream(leader, wire, abandon, watchMs);
      if (token != null) {
        stream.authenticate(token, timeoutMs);
      }
      Map<String, Object> meta = new LinkedHashMap<>();
      meta.put("topic", topic);
      meta.put("partition", partition);
      meta.put("offset", offset);
      meta.put("max_bytes", maxBytes);
      meta.put("isolation", isolation.wireName());
      stream.send(Frames.encode(FrameKind.REQUEST, ApiKeys.STREAM_FETCH, CORRELATION_ID, meta,
          ByteBuffer.allocate(0), 0, FrameHeader.STREAM));
      stream.credit(WINDOW);
      return stream;
    } catch (IOException | FluvioException e) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // already failing
      }
      if (e instanceof FluvioException fe) {
        throw fe;
      }
      throw new FluvioException(
          ErrorCode.CONNECTION_CLOSED, "cannot open a stream from %s: %s".formatted(leader, e), e);
    }
  }

  /**
   * The next push, waiting up to {@code waitMs} for it.
   *
   * @param waitMs how long to wait (at least 1 ms is used)
   * @return the partition's offsets and the pushed frames (copied: they outlive this call),
   *     or null when nothing came in time
   * @throws FluvioException the leader's typed error, {@code CONNECTION_CLOSED} when the
   *     stream ended or the socket failed, or {@code NOT_LEADER} when {@code abandon} said
   *     the leader was replaced
   */
  public FetchResult poll(long waitMs) {
    if (closed) {
      throw new FluvioException(ErrorCode.CONNECTION_CLOSED, "the stream from %s is closed".formatted(leader));
    }
    try {
      while (true) {
        Frame frame = decoder.next();
        if (frame == null) {
          if (!receive(Math.max(1, Math.min(waitMs, Integer.MAX_VALUE)))) {
            return null;
          }
          continue;
        }
        FrameKind kind = frame.header().kind();
        if (kind == FrameKind.ERROR) {
          close();
          throw errorOf(frame);
        }
        if (frame.header().correlationId() != CORRELATION_ID) {
          continue;
        }
        if (kind == FrameKind.END) {
          close();
          throw new FluvioException(ErrorCode.CONNECTION_CLOSED, "the stream from %s ended".formatted(leader));
        }
        if (kind != FrameKind.PUSH) {
          continue;
        }
        Map<String, Object> meta = frame.decodeMeta();
        ByteBuffer tail = ByteBuffer.allocate(frame.tail().remaining());
        tail.put(frame.tail().duplicate()).flip();
        if (++taken >= WINDOW / 2) {
          credit(taken);
          taken = 0;
        }
        return new FetchResult(
            new PartitionOffsets(num(meta, "log_start"), num(meta, "leo"), num(meta, "hw"), -1), tail);
      }
    } catch (IOException e) {
      close();
      throw new FluvioException(
          ErrorCode.CONNECTION_CLOSED, "the stream from %s failed: %s".formatted(leader, e.getMessage()), e);
    }
  }

  /**
   * Present {@code token} and wait for the answer, before the stream request: a server
   * with auth on checks the stream against the identity the token gives. Bounded by
   * {@code timeoutMs}; a hung leader is watched as while polling.
   */
  private void authenticate(String token, int timeoutMs) throws IOException {
    send(Frames.encode(FrameKind.REQUEST, ApiKeys.AUTHENTICATE, AUTHENTICATE_ID, Map.of("token", token),
        ByteBuffer.allocate(0), 0, 0));
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    long watchMs = Math.max(1, watchNanos / 1_000_000L);
    while (true) {
      Frame frame = decoder.next();
      if (frame == null) {
        long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
        if (leftMs <= 0) {
          throw new FluvioException(
              ErrorCode.REQUEST_TIMEOUT,
              "no reply from %s to api %d in time".formatted(leader, ApiKeys.AUTHENTICATE));
        }
        receive(Math.min(leftMs, abandon == null ? leftMs : watchMs));
        continue;
      }
      if (frame.header().kind() == FrameKind.ERROR) {
        throw errorOf(frame);
      }
      if (frame.header().kind() == FrameKind.RESPONSE && frame.header().correlationId() == AUTHENTICATE_ID) {
        return;
      }
    }
  }

  /**
   * Read what the leader sent within {@code timeoutMs} into the decoder; false when
   * nothing came (then the watch is asked, {@link #abandonIfReplaced}).
   *
   * @throws IOException the leader closed the connection, or the socket failed
   */
  private boolean receive(long timeoutMs) throws IOException {
    socket.setSoTimeout((int) timeoutMs);
    int n;
    try {
      n = in.read(readBuffer);
    } catch (SocketTimeoutException e) {
      abandonIfReplaced();
      return false;
    }
    if (n < 0) {
      throw new IOException("the leader closed the connection");
    }
    decoder.feed(ByteBuffer.wrap(readBuffer, 0, n));
    lastHeard = System.nanoTime(); // the leader is alive: the watch starts over
    return true;
  }

  /**
   * Once {@code watchMs} passed without a byte from the leader (or since the last check),
   * ask {@code abandon}; end the stream with {@code NOT_LEADER} when it says so.
   */
  private void abandonIfReplaced() {
    long now = System.nanoTime();
    if (abandon == null || now - lastHeard < watchNanos) {
      return;
    }
    lastHeard = now;
    if (abandon.getAsBoolean()) {
      close();
      throw new FluvioException(
          ErrorCode.NOT_LEADER,
          "the stream from %s was given up after the metadata replaced that leader".formatted(leader));
    }
  }

  private void credit(int n) throws IOException {
    send(Frames.encode(FrameKind.CREDIT, ApiKeys.STREAM_FETCH, CORRELATION_ID, Map.of("credit", n),
        ByteBuffer.allocate(0), 0, 0));
  }

  private void send(byte[] frame) throws IOException {
    out.write(frame);
    out.flush();
  }

  private static long num(Map<String, Object> meta, String name) {
    if (meta.get(name) instanceof Number n) {
      return n.longValue();
    }
    throw new FluvioException(ErrorCode.INVALID_REQUEST, "push lacks an integer '%s': %s".formatted(name, meta));
  }

  private static FluvioException errorOf(Frame reply) {
    Map<String, Object> meta = reply.decodeMeta();
    Object code = meta.get("code");
    Object message = meta.get("message");
    return FluvioException.forCode(
        code instanceof Number n ? n.intValue() : ErrorCode.FLUVIO.code(), message == null ? "" : message.toString());
  }

  /** Cancel the stream (best effort) and close the socket. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      send(Frames.encode(FrameKind.CANCEL, ApiKeys.STREAM_FETCH, CORRELATION_ID, Map.of(),
          ByteBuffer.allocate(0), 0, 0));
    } catch (IOException ignored) {
      // the socket is gone already
    }
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing: nothing left to do
    }
  }
}

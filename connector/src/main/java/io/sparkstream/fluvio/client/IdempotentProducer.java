package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.Compression;
import io.sparkstream.fluvio.records.FrameEncoder;
import io.sparkstream.fluvio.records.Record;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.memory.BufferAllocator;

/**
 * An idempotent producer of one topic: the Java side of {@code
 * spark_stream/client/producer/} for what a sink task needs.
 *
 * <p>Theory of operation. Records are routed as Python's default partitioner routes
 * them (an explicit partition wins; a key goes to {@code fnv1a32(key) % partitions}; a
 * record without a key goes round robin, the counter starting at 0 and counting keyless
 * records only) and queued per partition. A partition's queue is <em>cut</em> into a
 * frame once it holds {@code frameRecords} records or {@code frameBytes} bytes of record
 * data (keys, values, header names and values), on {@link #flush}, and, with a linger,
 * when its oldest record has waited {@code lingerMs} (so a slow input in real-time mode
 * does not wait for the batch's end). Each frame carries the producer id and the
 * partition's record-based sequence: 0 for the first record this producer sends to the
 * partition, then advanced by each frame's count. The sequence of a record therefore
 * depends only on the records and their order, never on where the frames were cut: a
 * re-run of the same records under the same producer id gives every record the same
 * sequence, and the leader, which judges a frame by its sequence range (wholly below
 * what it holds: a duplicate; straddling it: refused, see {@link #sendRange}), lands each
 * record once however differently a linger cut the two runs.
 *
 * <p>Frames go one per {@code PRODUCE} request, in cut order, so a partition's frames
 * reach the leader in sequence order. Without a linger ({@code lingerMs < 0}) the
 * caller's thread sends each frame as it is cut. With one, a sender thread sends them
 * while the caller goes on routing: up to {@link #PIPELINE_FRAMES} cut frames wait for
 * it, then {@link #send} blocks. A failed send stops the sender; the next {@link #send}
 * or {@link #flush} throws its error.
 *
 * <p>Errors: retriable ones (a leader change) are retried by {@link LeaderClient};
 * {@code DuplicateSequenceError} (a frame older than the leader remembers) counts as
 * delivered; {@code OutOfOrderSequenceError} splits a frame that straddles what the
 * leader holds (see {@link #sendRange}) and is retried for a single record, as the
 * Python sender retries it while a new leader settles. Anything else fails the send.
 *
 * <p>Not serializable. {@link #send} and {@link #flush} are called from one thread; the
 * {@link LeaderClient}, which producers of several topics may share, is used under its
 * own monitor. {@link #close} stops the sender.
 */
public final class IdempotentProducer implements AutoCloseable {
  /** Cut frames that may wait for the sender before {@link #send} blocks. */
  public static final int PIPELINE_FRAMES = 4;

  /** A frame cut from a partition's queue, with the sequence of its first record. */
  private record Cut(int partition, List<Record> records, int sequence) {}

  private final LeaderClient client;
  private final String topic;
  private final long producerId;
  private final Compression compression;
  private final int acks;
  private final int frameRecords;
  private final long frameBytes;
  private final long lingerNanos;
  private final BufferAllocator allocator;
  private final int partitions;
  /** A typed topic's schema (its typed records are written in the latest version), or null. */
  private final TopicSchema typed;
  private long roundRobin;

  // Guarded by `lock`: the queues, the cut frames waiting, the counters, the failure.
  private final Object lock = new Object();
  private final Map<Integer, List<Record>> queues = new TreeMap<>();
  private final Map<Integer, Long> queuedBytes = new TreeMap<>();
  private final Map<Integer, Long> queuedSince = new TreeMap<>();
  private final Map<Integer, Integer> sequences = new TreeMap<>();
  private final ArrayDeque<Cut> ready = new ArrayDeque<>();
  private int sending;
  private long sent;
  private long frames;
  private long lingerCuts;
  private RuntimeException failure;
  private boolean closed;
  private Thread sender;

  /**
   * A producer of {@code topic} under {@code producerId} that cuts frames by the records
   * alone (no linger).
   *
   * @param client routes requests to leaders (the caller closes it)
   * @param topic the topic
   * @param producerId the idempotent producer id (derived, see {@link ProducerIds})
   * @param compression the frames' Arrow buffer compression
   * @param acks 0 none, 1 leader, -1 all
   * @param frameRecords records per frame at most, at least 1
   * @param frameBytes record data bytes at which a frame is cut, at least 1
   * @param allocator for the frames' temporary Arrow buffers
   * @throws FluvioException the topic's metadata cannot be had
   */
  public IdempotentProducer(
      LeaderClient client,
      String topic,
      long producerId,
      Compression compression,
      int acks,
      int frameRecords,
      long frameBytes,
      BufferAllocator allocator) {
    this(client, topic, producerId, compression, acks, frameRecords, frameBytes, -1, allocator);
  }

  /**
   * A producer of {@code topic} under {@code producerId}.
   *
   * @param client routes requests to leaders (the caller closes it)
   * @param topic the topic
   * @param producerId the idempotent producer id (derived, see {@link ProducerIds})
   * @param compression the frames' Arrow buffer compression
   * @param acks 0 none, 1 leader, -1 all
   * @param frameRecords records per frame at most, at least 1
   * @param frameBytes record data bytes at which a frame is cut, at least 1
   * @param lingerMs how long a partial frame waits for more records before a sender
   *     thread sends it; negative: no linger and no sender thread
   * @param allocator for the frames' temporary Arrow buffers (shared with the sender)
   * @throws FluvioException the topic's metadata cannot be had
   */
  public IdempotentProducer(
      LeaderClient client,
      String topic,
      long producerId,
      Compression compression,
      int acks,
      int frameRecords,
      long frameBytes,
      long lingerMs,
      BufferAllocator allocator) {
    if (frameRecords < 1 || frameBytes < 1) {
      throw new IllegalArgumentException("frameRecords and frameBytes must be at least 1");
    }
    this.frameBytes = frameBytes;
    this.client = client;
    this.topic = topic;
    this.producerId = producerId;
    this.compression = compression;
    this.acks = acks;
    this.frameRecords = frameRecords;
    this.lingerNanos = lingerMs < 0 ? -1 : lingerMs * 1_000_000L;
    this.allocator = allocator;
    synchronized (client) {
      Metadata metadata = client.metadata(topic);
      this.partitions = metadata.partitionCount();
      this.typed = metadata.schema();
    }
  }

  /**
   * Queue a record, routed by its key, and cut its partition's frame when full.
   *
   * @param record the record
   * @param partition an explicit partition, or null to route by key
   * @throws FluvioException {@code UNKNOWN_PARTITION} for a partition outside the topic,
   *     or the error an earlier send failed with
   */
  public void send(Record record, Integer partition) {
    int p;
    if (partition != null) {
      if (partition < 0 || partition >= partitions) {
        throw new FluvioException(
            ErrorCode.UNKNOWN_PARTITION,
            "partition column holds values outside 0..%d".formatted(partitions - 1));
      }
      p = partition;
    } else if (record.key() != null) {
      p = Partitioner.partitionFor(record.key(), partitions);
    } else {
      p = (int) (roundRobin++ % partitions);
    }
    synchronized (lock) {
      throwFailure();
      List<Record> queue = queues.computeIfAbsent(p, k -> new ArrayList<>());
      // The sender is woken only when its work changes: a new linger deadline or a frame.
      boolean wake = queue.isEmpty();
      if (wake) {
        queuedSince.put(p, System.nanoTime());
      }
      queue.add(record);
      long bytes = queuedBytes.merge(p, dataBytes(record), Long::sum);
      if (queue.size() >= frameRecords || bytes >= frameBytes) {
        cut(p);
        wake = true;
      }
      if (lingerNanos >= 0) {
        startSender();
        if (wake) {
          lock.notifyAll();
        }
        while (ready.size() >= PIPELINE_FRAMES && failure == null) {
          await(0);
        }
        throwFailure();
        return;
      }
    }
    sendReady();
  }

  /**
   * Cut every partition's queued records, in partition order, and return once every frame
   * is acknowledged.
   *
   * @throws FluvioException the error a send failed with
   */
  public void flush() {
    synchronized (lock) {
      for (int p : new ArrayList<>(queues.keySet())) {
        cut(p);
      }
      if (lingerNanos >= 0) {
        lock.notifyAll();
        while ((!ready.isEmpty() || sending > 0) && failure == null && sender != null && !closed) {
          await(0);
        }
        throwFailure();
        return;
      }
    }
    sendReady();
  }

  /** Records sent so far (duplicates a leader dropped included). */
  public long recordsSent() {
    synchronized (lock) {
      return sent;
    }
  }

  /** Frames sent so far. */
  public long framesSent() {
    synchronized (lock) {
      return frames;
    }
  }

  /** Frames cut because their oldest record waited the linger (not full yet). */
  public long lingerCuts() {
    synchronized (lock) {
      return lingerCuts;
    }
  }

  /** The topic's partition count, as read when the producer was made. */
  public int partitionCount() {
    return partitions;
  }

  /** Stop the sender thread; frames not yet sent are dropped (call {@link #flush} first). */
  @Override
  public void close() {
    Thread t;
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
      t = sender;
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static long dataBytes(Record r) {
    long n = r.key() == null ? 0 : r.key().length;
    if (r.typed()) {
      for (Object c : r.columns()) {
        n += c instanceof byte[] b ? b.length : 8;
      }
    } else {
      n += r.value().length;
    }
    if (r.headers() != null) {
      for (Record.Header h : r.headers()) {
        n += h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + (h.value() == null ? 0 : h.value().length);
      }
    }
    return n;
  }

  /** Move a partition's queue into a frame with its record-based sequence (under lock). */
  private void cut(int partition) {
    List<Record> queue = queues.get(partition);
    if (queue == null || queue.isEmpty()) {
      return;
    }
    int sequence = sequences.getOrDefault(partition, 0);
    ready.add(new Cut(partition, List.copyOf(queue), sequence));
    sequences.put(partition, sequence + queue.size());
    queue.clear();
    queuedBytes.put(partition, 0L);
    queuedSince.remove(partition);
  }

  /**
   * Cut the partitions whose oldest record waited the linger (under lock).
   *
   * @return nanoseconds until the next partition's linger ends, or -1 when none waits
   */
  private long cutLingered(long now) {
    long next = -1;
    for (Map.Entry<Integer, Long> e : new ArrayList<>(queuedSince.entrySet())) {
      long left = e.getValue() + lingerNanos - now;
      if (left <= 0) {
        cut(e.getKey());
        lingerCuts++;
      } else if (next < 0 || left < next) {
        next = left;
      }
    }
    return next;
  }

  private void startSender() {
    if (sender == null) {
      sender = new Thread(this::senderLoop, "fluvio-producer-" + topic);
      sender.setDaemon(true);
      sender.start();
    }
  }

  /** The sender thread: send cut frames in order; cut partitions whose linger ended. */
  private void senderLoop() {
    try {
      while (sendNext()) {
        // one frame sent (or failed: then sendNext returns false next time)
      }
    } catch (Throwable t) { // never leave the task waiting on a dead sender
      synchronized (lock) {
        if (failure == null) {
          failure = t instanceof RuntimeException r
              ? r : new FluvioException(ErrorCode.FLUVIO, "the producer's sender failed: " + t, t);
        }
        lock.notifyAll();
      }
    }
  }

  /** Wait for a frame (cutting lingered partitions), send it; false once closed or failed. */
  private boolean sendNext() {
    Cut next;
    synchronized (lock) {
      while (true) {
        if (closed || failure != null) {
          return false;
        }
        if (ready.isEmpty()) {
          long wait = cutLingered(System.nanoTime());
          if (ready.isEmpty()) {
            await(wait < 0 ? 0 : Math.max(1, wait / 1_000_000L));
            continue;
          }
        }
        next = ready.poll();
        sending++;
        break;
      }
    }
    RuntimeException error = null;
    try {
      sendRange(next.partition(), next.records(), next.sequence());
    } catch (RuntimeException e) {
      error = e;
    }
    synchronized (lock) {
      sending--;
      if (error == null) {
        sent += next.records().size();
        frames++;
      } else if (failure == null) {
        failure = error;
      }
      lock.notifyAll();
    }
    return true;
  }

  /** Without a linger: send the cut frames in the caller's thread. */
  private void sendReady() {
    while (true) {
      Cut next;
      synchronized (lock) {
        next = ready.poll();
      }
      if (next == null) {
        return;
      }
      try {
        sendRange(next.partition(), next.records(), next.sequence());
      } catch (RuntimeException e) {
        synchronized (lock) {
          failure = e; // a later frame must not go after a lost one: that would be a gap
        }
        throw e;
      }
      synchronized (lock) {
        sent += next.records().size();
        frames++;
      }
    }
  }

  private void throwFailure() {
    if (failure != null) {
      throw failure;
    }
  }

  private void await(long ms) {
    try {
      lock.wait(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FluvioException(ErrorCode.CLIENT_CLOSED, "interrupted while producing", e);
    }
  }

  /**
   * Send records as one frame from {@code sequence}. A re-run whose frames are cut
   * differently from the first run's (a linger that cut elsewhere, another batch
   * duration in real-time mode, the other side's writer) can straddle the leader's next
   * expected sequence, which it refuses with {@code OutOfOrderSequenceError}; the frame
   * is then halved and each half sent, so the part the leader holds is dropped as a
   * duplicate and the rest appended. A single record cannot straddle: its out-of-order
   * error is retried (a new leader settling), as Python does.
   */
  private void sendRange(int partition, List<Record> records, int sequence) {
    byte[] frame = FrameEncoder.encode(records, typed, compression, producerId, sequence, allocator);
    try {
      synchronized (client) {
        client.produce(topic, partition, acks, frame, records.size() == 1);
      }
    } catch (FluvioException e) {
      if (e.code() == ErrorCode.DUPLICATE_SEQUENCE) {
        return; // older than the leader remembers: an earlier attempt appended it
      }
      if (e.code() != ErrorCode.OUT_OF_ORDER_SEQUENCE || records.size() == 1) {
        throw e;
      }
      int half = records.size() / 2;
      sendRange(partition, records.subList(0, half), sequence);
      sendRange(partition, records.subList(half, records.size()), sequence + half);
    }
  }
}

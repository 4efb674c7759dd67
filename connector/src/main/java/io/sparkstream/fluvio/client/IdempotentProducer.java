package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.Compression;
import io.sparkstream.fluvio.records.FrameEncoder;
import io.sparkstream.fluvio.records.Record;
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
 * records only), queued per partition, and cut into frames by the records alone: a
 * partition's queue is sent as one frame once it holds {@code frameRecords} records or
 * {@code frameBytes} bytes of record data (keys, values, header names and values), and
 * the rest on {@link #flush}. No cut depends on time or on encoded sizes. Each frame carries the producer id and the partition's
 * record-based sequence (0 for the first record this producer sends to the partition,
 * then advanced by each frame's count), and goes alone in one {@code PRODUCE} request,
 * synchronously, so a partition has one frame in flight and frames reach the leader in
 * sequence order. Routing, cuts and sequences depend only on the records and their
 * order, so the same records sent again under the same producer id make the same
 * frames, which the leader recognises and drops: that is how a re-run Spark task or
 * micro-batch lands once.
 *
 * <p>Errors: retriable ones (a leader change) are retried by {@link LeaderClient};
 * {@code DuplicateSequenceError} (a frame older than the leader remembers) counts as
 * delivered; {@code OutOfOrderSequenceError} splits a frame that straddles what the
 * leader holds (see {@link #sendRange}) and is retried for a single record, as the
 * Python sender retries it while a new leader settles. Anything else fails the send.
 *
 * <p>Not thread-safe and not serializable: a task makes one and closes its client.
 */
public final class IdempotentProducer {
  private final LeaderClient client;
  private final String topic;
  private final long producerId;
  private final Compression compression;
  private final int acks;
  private final int frameRecords;
  private final long frameBytes;
  private final Map<Integer, Long> queuedBytes = new TreeMap<>();
  private final BufferAllocator allocator;
  private final int partitions;
  private final Map<Integer, List<Record>> queues = new TreeMap<>();
  private final Map<Integer, Integer> sequences = new TreeMap<>();
  private long roundRobin;
  private long sent;
  private long frames;

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
    this.allocator = allocator;
    this.partitions = client.metadata(topic).partitionCount();
  }

  /**
   * Queue a record, routed by its key, and send its partition's frame when full.
   *
   * @param record the record
   * @param partition an explicit partition, or null to route by key
   * @throws FluvioException {@code UNKNOWN_PARTITION} for a partition outside the topic,
   *     or the error a send failed with
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
    List<Record> queue = queues.computeIfAbsent(p, k -> new ArrayList<>());
    queue.add(record);
    long bytes = queuedBytes.merge(p, dataBytes(record), Long::sum);
    if (queue.size() >= frameRecords || bytes >= frameBytes) {
      sendFrame(p, queue);
      queue.clear();
      queuedBytes.put(p, 0L);
    }
  }

  /** Send every partition's queued records, in partition order. */
  public void flush() {
    for (Map.Entry<Integer, List<Record>> e : queues.entrySet()) {
      if (!e.getValue().isEmpty()) {
        sendFrame(e.getKey(), e.getValue());
        e.getValue().clear();
        queuedBytes.put(e.getKey(), 0L);
      }
    }
  }

  /** Records sent so far (duplicates a leader dropped included). */
  public long recordsSent() {
    return sent;
  }

  /** Frames sent so far. */
  public long framesSent() {
    return frames;
  }

  /** The topic's partition count, as read when the producer was made. */
  public int partitionCount() {
    return partitions;
  }

  private static long dataBytes(Record r) {
    long n = r.value().length + (r.key() == null ? 0 : r.key().length);
    if (r.headers() != null) {
      for (Record.Header h : r.headers()) {
        n += h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + (h.value() == null ? 0 : h.value().length);
      }
    }
    return n;
  }

  private void sendFrame(int partition, List<Record> records) {
    int sequence = sequences.getOrDefault(partition, 0);
    sendRange(partition, records, sequence);
    sequences.put(partition, sequence + records.size());
    sent += records.size();
    frames++;
  }

  /**
   * Send records as one frame from {@code sequence}. A re-run whose frames are cut
   * differently from the first run's (another batch duration in real-time mode, the
   * other side's writer) can straddle the leader's next expected sequence, which it
   * refuses with {@code OutOfOrderSequenceError}; the frame is then halved and each half
   * sent, so the part the leader holds is dropped as a duplicate and the rest appended.
   * A single record cannot straddle: its out-of-order error is retried (a new leader
   * settling), as Python does.
   */
  private void sendRange(int partition, List<Record> records, int sequence) {
    byte[] frame = FrameEncoder.encode(records, compression, producerId, sequence, allocator);
    try {
      client.produce(topic, partition, acks, frame, records.size() == 1);
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

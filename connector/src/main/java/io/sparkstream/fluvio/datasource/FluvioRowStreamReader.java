package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.FetchResult;
import io.sparkstream.fluvio.client.FetchStream;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.BatchFrames;
import io.sparkstream.fluvio.records.FrameSlice;
import io.sparkstream.fluvio.tier.TierPrefix;
import java.util.ArrayDeque;
import java.util.Deque;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReader;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one partition without an end, row by row, over a {@code STREAM_FETCH} stream from
 * its leader: the reader of continuous tasks ({@code next} blocks until a record comes or
 * the reader is closed) and of real-time tasks ({@code nextWithTimeout} waits up to a
 * deadline).
 *
 * <p>A tiered topic's records below the SPU's log start are read from the tier first
 * ({@link TierPrefix}, batch by batch like frames), then the stream opens where the SPU's
 * log starts.
 *
 * <p>Each push's frames are checked (crc, Arrow validity), decoded one at a time and
 * trimmed to the next offset; a row is a view into the current frame's batch, valid until
 * the next call (Spark copies or consumes it first). On a retriable failure (leader gone,
 * {@code NotLeaderError}, a closed stream, a hung leader the SC replaced: {@link
 * LeaderClient#stream}) the stream is reopened at the next offset on the leader of the
 * moment, with backoff; {@link #getOffset} is always the next offset to
 * return, so nothing is lost or repeated.
 */
final class FluvioRowStreamReader
    implements ContinuousPartitionReader<InternalRow>, SupportsRealTimeRead<InternalRow> {
  /** Longest single wait on the socket, so {@code close} and deadlines are seen soon. */
  private static final long POLL_MS = 100;

  private static final long MAX_BACKOFF_MS = 2_000;

  private final ReaderOptions options;
  private final StructType schema;
  private final FluvioStreamPartition partition;
  private final BufferAllocator allocator = new RootAllocator();
  private final Deque<FrameSlice> pending = new ArrayDeque<>();
  private final Configuration hadoopConf;
  private FetchStream stream;
  /** The SC client the stream is opened through and that watches its leader. */
  private LeaderClient client;
  private TierPrefix tier;
  private LeaderClient tierClient;
  private long next;
  private boolean started;
  private VectorSchemaRoot root;
  private ColumnarBatch batch;
  private int row;
  private long backoffMs;
  private volatile boolean closed;

  FluvioRowStreamReader(
      ReaderOptions options, StructType schema, FluvioStreamPartition partition, Configuration hadoopConf) {
    this.options = options;
    this.schema = schema;
    this.partition = partition;
    this.hadoopConf = hadoopConf;
    this.next = partition.start();
  }

  @Override
  public boolean next() {
    while (!closed) {
      if (advance(POLL_MS)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public SupportsRealTimeRead.RecordStatus nextWithTimeout(Long startTimeMs, Long timeoutMs) {
    long deadline = startTimeMs + timeoutMs;
    while (!closed) {
      long left = deadline - System.currentTimeMillis();
      if (advance(Math.max(0, Math.min(left, POLL_MS)))) {
        return SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(true);
      }
      if (left <= 0) {
        break;
      }
    }
    return SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(false);
  }

  /**
   * Spark 4.1's form of {@link #nextWithTimeout(Long, Long)} (its interface has only this
   * one, 4.2's only the other; the JVM links by descriptor, so one jar serves both).
   *
   * @param timeoutMs how long to wait from now
   * @return whether a record is ready
   */
  public SupportsRealTimeRead.RecordStatus nextWithTimeout(Long timeoutMs) {
    return nextWithTimeout(System.currentTimeMillis(), timeoutMs);
  }

  /** Move to the next record, waiting up to {@code waitMs} for one to arrive. */
  private boolean advance(long waitMs) {
    if (batch != null && ++row < batch.numRows()) {
      next++;
      return true;
    }
    release();
    while (!pending.isEmpty()) {
      FrameSlice frame = pending.poll();
      long base = frame.header().baseOffset();
      if (frame.header().nextOffset() <= next) {
        continue; // before the next offset: the stream starts at the frame holding it
      }
      VectorSchemaRoot decoded = BatchFrames.decode(frame, allocator);
      int from = (int) Math.max(0, next - base);
      if (from > 0) {
        VectorSchemaRoot sliced = decoded.slice(from, decoded.getRowCount() - from);
        decoded.close();
        decoded = sliced;
      }
      root = decoded;
      batch = FrameColumns.of(schema, decoded, partition.topic(), partition.partition(), base + from);
      row = 0;
      next = base + from + 1;
      return true;
    }
    if (!started) {
      start();
    }
    if (tier != null && fromTier()) {
      return true;
    }
    poll(waitMs);
    return false;
  }

  /** Wait for one push and queue its frames; reopen the stream after a retriable failure. */
  private void poll(long waitMs) {
    try {
      if (stream == null) {
        open();
      }
      FetchResult push = stream.poll(waitMs);
      if (push != null) {
        pending.addAll(BatchFrames.split(push.frames(), true));
        backoffMs = 0;
      }
    } catch (FluvioException e) {
      if (!e.retriable() || closed) {
        throw e;
      }
      closeStream();
      backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs == 0 ? 50 : backoffMs * 2);
      sleep(backoffMs);
    }
  }

  private void open() {
    if (client == null) {
      client = new LeaderClient(options.endpoint(), FluvioScan.TIMEOUT_MS, options.token());
    }
    stream = client.stream(
        partition.topic(), partition.partition(), next, options.fetchMaxBytes(), options.isolation());
  }

  /**
   * Where the reader starts (its planned offset, checked against the readable log start,
   * which counts the tier in), and the tier prefix when the topic is tiered: it keeps a
   * client of the cluster until the reader is past the tier.
   */
  private void start() {
    LeaderClient client = new LeaderClient(options.endpoint(), FluvioScan.TIMEOUT_MS, options.token());
    try {
      long logStart = TierPrefix.readableOffsets(client, partition.topic(), partition.partition(), hadoopConf).logStart();
      FluvioInputPartition range = new FluvioInputPartition(
          partition.topic(), partition.partition(), next, Long.MAX_VALUE, partition.fromLogStart());
      next = Planning.checkedStart(range, logStart, options.failOnDataLoss());
      String url = TierPrefix.tierUrl(client, partition.topic());
      if (url != null) {
        tier = new TierPrefix(client, partition.topic(), partition.partition(), url, hadoopConf);
        tierClient = client;
        client = null;
      }
      started = true;
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  /** The next batch of the tier prefix, as the current batch; false once past the tier. */
  private boolean fromTier() {
    VectorSchemaRoot tiered = tier.next(next, Long.MAX_VALUE, TierPrefix.MAX_BATCH_ROWS, allocator);
    if (tiered == null) {
      closeTier(); // on the SPU from here
      return false;
    }
    root = tiered;
    batch = FrameColumns.of(schema, tiered, partition.topic(), partition.partition(), next);
    row = 0;
    next++;
    return true;
  }

  private void closeTier() {
    if (tier != null) {
      tier.close();
      tier = null;
    }
    if (tierClient != null) {
      tierClient.close();
      tierClient = null;
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public InternalRow get() {
    return batch.getRow(row);
  }

  /** The next offset this reader returns (the offset after the current record's). */
  @Override
  public PartitionOffset getOffset() {
    return new FluvioPartitionOffset(partition.topic(), partition.partition(), next);
  }

  private void release() {
    if (root != null) {
      root.close();
      root = null;
      batch = null;
    }
  }

  private void closeStream() {
    if (stream != null) {
      stream.close();
      stream = null;
    }
  }

  @Override
  public void close() {
    closed = true;
    closeStream();
    if (client != null) {
      client.close();
    }
    closeTier();
    release();
    pending.clear();
    allocator.close();
  }
}

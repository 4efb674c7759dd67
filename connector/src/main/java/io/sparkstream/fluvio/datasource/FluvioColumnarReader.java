package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.FetchResult;
import io.sparkstream.fluvio.client.Isolation;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.LocalFetch;
import io.sparkstream.fluvio.client.LocalFiles;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.BatchHeader;
import io.sparkstream.fluvio.records.FrameBuffer;
import io.sparkstream.fluvio.tier.TierPrefix;
import java.nio.ByteBuffer;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one input partition's records {@code [start, end)} as columnar batches, one per
 * batch frame: fetches frames from the leader (with failover), from its segment file when
 * that is on this host ({@code localReads}, {@link LocalFiles}) and over the network
 * otherwise; checks each frame's crc and Arrow validity, trims the first and last frame
 * to the range, and exposes the stored columns as {@link ArrowColumnVector}s and the
 * computed ones as {@link ValueColumn}s.
 *
 * <p>Reads copy nothing into Arrow buffers: a fetch's frames become one {@link
 * FrameBuffer} (a mapped segment range wrapped in place, a network reply copied once into
 * direct memory) and each batch's vectors are slices of it.
 *
 * <p>A tiered topic's records below the SPU's log start come from the tier first ({@link
 * TierPrefix}: its Parquet files, read column by column into the same Arrow schema), with
 * the same offsets, and the read continues from the SPU where its log starts.
 *
 * <p>Each batch's Arrow buffers live until the next call to {@link #next()} or {@link
 * #close()}, which Spark makes after it is done with the batch.
 */
final class FluvioColumnarReader implements PartitionReader<ColumnarBatch> {
  /** Bytes a committed local fetch may name at once, as in Python (mapped, not copied). */
  static final int LOCAL_MAPPED_MAX_BYTES = 256 * 1024 * 1024;

  private final ReaderOptions options;
  private final StructType schema;
  private final FluvioInputPartition range;
  private final BufferAllocator allocator = new RootAllocator();
  private final LeaderClient client;
  private final Configuration hadoopConf;
  private TierPrefix tier;
  private FrameBuffer frames;
  private int nextFrame;
  private long next;
  private boolean local;
  private VectorSchemaRoot current;
  private ColumnarBatch batch;

  FluvioColumnarReader(
      ReaderOptions options, StructType schema, FluvioInputPartition range, Configuration hadoopConf) {
    this.options = options;
    this.schema = schema;
    this.range = range;
    this.hadoopConf = hadoopConf;
    this.client = new LeaderClient(options.endpoint(), FluvioScan.TIMEOUT_MS, options.token());
    this.next = -1; // checked against the log start at the first next()
    this.local = options.localReads();
  }

  @Override
  public boolean next() {
    release();
    if (next < 0) {
      long logStart = TierPrefix.readableOffsets(client, range.topic(), range.partition(), hadoopConf).logStart();
      next = Planning.checkedStart(range, logStart, options.failOnDataLoss());
      String url = TierPrefix.tierUrl(client, range.topic());
      tier = url == null ? null : new TierPrefix(client, range.topic(), range.partition(), url, hadoopConf);
    }
    if (tier != null && next < range.end()) {
      VectorSchemaRoot root = tier.next(next, range.end(), TierPrefix.MAX_BATCH_ROWS, allocator);
      if (root != null) {
        current = root;
        batch = columns(root, next);
        next += root.getRowCount();
        return true;
      }
      closeTier(); // on the SPU from here
    }
    while (next < range.end()) {
      if (frames == null || nextFrame >= frames.size()) {
        fetch();
      }
      int index = nextFrame++;
      BatchHeader header = frames.header(index);
      long base = header.baseOffset();
      if (header.nextOffset() <= next) {
        continue; // a frame wholly before the range (the fetch starts at the one holding it)
      }
      VectorSchemaRoot root = frames.decode(index, true, allocator);
      int from = (int) Math.max(0, next - base);
      int to = (int) Math.min(root.getRowCount(), range.end() - base);
      if (from > 0 || to < root.getRowCount()) {
        VectorSchemaRoot sliced = root.slice(from, to - from);
        root.close();
        root = sliced;
      }
      current = root;
      batch = columns(root, base + from);
      next = base + to;
      return true;
    }
    return false;
  }

  private void fetch() {
    FetchResult result = local ? fetchLocal() : null;
    if (result == null) {
      local = false; // not readable from here: the rest of this range goes over the network
      result =
          client.fetch(range.topic(), range.partition(), next, options.fetchMaxBytes(), options.isolation());
    }
    closeFrames();
    frames = FrameBuffer.of(result.frames(), true, allocator);
    nextFrame = 0;
    if (frames.size() == 0) {
      throw new FluvioException(
          ErrorCode.DATA_LOSS,
          "%s/%d: the leader returned no records at offset %d, below the planned end %d (hw %d, leo %d)"
              .formatted(range.topic(), range.partition(), next, range.end(),
                  result.offsets().hw(), result.offsets().leo()));
    }
  }

  /**
   * A local fetch ({@code FETCH_LOCAL}, then the segment file read here), or null when
   * the leader's file cannot be read from this host or does not hold what was named.
   */
  private FetchResult fetchLocal() {
    boolean committed = options.isolation() == Isolation.COMMITTED;
    LocalFetch reply;
    try {
      reply =
          client.fetchLocal(range.topic(), range.partition(), next,
              committed ? Math.max(options.fetchMaxBytes(), LOCAL_MAPPED_MAX_BYTES) : options.fetchMaxBytes(),
              options.isolation());
    } catch (FluvioException e) {
      if (e.code() == ErrorCode.UNSUPPORTED_VERSION) {
        return null; // a leader from before local fetches
      }
      throw e;
    }
    if (reply.path().isEmpty()) {
      return new FetchResult(reply.offsets(), ByteBuffer.allocate(0));
    }
    ByteBuffer data =
        LocalFiles.read(reply.path(), reply.position(), reply.length(), reply.device(), reply.inode(), committed);
    if (data == null || data.remaining() < BatchHeader.SIZE) {
      return null;
    }
    try {
      if (BatchHeader.read(data, 0).baseOffset() != reply.baseOffset()) {
        return null; // the file does not hold the frames named
      }
    } catch (FluvioException e) {
      return null;
    }
    return new FetchResult(reply.offsets(), data);
  }

  private ColumnarBatch columns(VectorSchemaRoot root, long firstOffset) {
    return FrameColumns.of(schema, root, range.topic(), range.partition(), firstOffset);
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  private void release() {
    if (current != null) {
      current.close();
      current = null;
      batch = null;
    }
  }

  private void closeTier() {
    if (tier != null) {
      tier.close();
      tier = null;
    }
  }

  private void closeFrames() {
    if (frames != null) {
      frames.close();
      frames = null;
    }
  }

  @Override
  public void close() {
    release();
    closeTier();
    closeFrames();
    client.close();
    allocator.close();
  }
}

package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads below a partition's log start, from its topic's tier, up to where the SPU's log
 * starts: the JVM's {@code spark_stream/client/consumer/tiered.py}. A reader asks {@link
 * #next} for batches from its next offset until it answers null, then fetches from the SPU
 * as before; offsets are the same as the SPU's (the file's {@code offset} column, checked).
 *
 * <p>The SPU's log start may move while the tier is read (local retention): the prefix
 * asks the leader again before each file, and reads on until it reaches wherever the
 * SPU's log starts by then, so no offset is skipped or read twice.
 */
public final class TierPrefix implements AutoCloseable {
  /** Most rows in one batch of the tier (a file's row group may hold a whole segment). */
  public static final int MAX_BATCH_ROWS = 65_536;

  private final LeaderClient client;
  private final String topic;
  private final int partition;
  private final String tierUrl;
  private final TopicSchema schema;
  private final Configuration conf;
  private TierFileReader file;
  private long fileStop;

  /**
   * The tier prefix of a partition. A typed topic's files are read in its latest schema
   * as the SC has it now (a file of an older version lacks the columns added since).
   *
   * @param client a client of the cluster (not closed here)
   * @param topic the topic
   * @param partition the partition
   * @param tierUrl the topic's tier ({@link #tierUrl})
   * @param conf the Hadoop configuration to open the tier with (the session's)
   */
  public TierPrefix(LeaderClient client, String topic, int partition, String tierUrl, Configuration conf) {
    this.client = client;
    this.topic = topic;
    this.partition = partition;
    this.tierUrl = tierUrl;
    this.conf = conf;
    this.schema = client.metadata(topic).schema();
  }

  /** The topic's tier as the SC has it, or null when the topic is not tiered. */
  public static String tierUrl(LeaderClient client, String topic) {
    return client.metadata(topic).tier();
  }

  /**
   * {@code (log_start, leo, hw)} with {@code log_start} the first offset readable at all:
   * the tier's start when the tier reaches the SPU's log start, else the SPU's ({@code
   * readable_offsets} of {@code tiered.py}).
   *
   * @param client a client of the cluster
   * @param topic the topic
   * @param partition the partition
   * @param conf the Hadoop configuration to open the tier with (the session's)
   * @return the offsets
   */
  public static PartitionOffsets readableOffsets(
      LeaderClient client, String topic, int partition, Configuration conf) {
    PartitionOffsets offsets = client.fetchOffsets(topic, partition, null);
    String url = tierUrl(client, topic);
    if (url == null || offsets.logStart() == 0) {
      return offsets;
    }
    long start = TierFiles.loadManifest(url, partition, conf).tierStart(offsets.logStart());
    return new PartitionOffsets(start, offsets.leo(), offsets.hw(), offsets.offset());
  }

  /**
   * The next records from {@code position}, below {@code end} and the SPU's log start.
   *
   * @param position the reader's next offset
   * @param end offset after the last one the reader wants ({@link Long#MAX_VALUE}: none)
   * @param maxRows most rows to return
   * @param allocator where the vectors live
   * @return a root of {@code RecordSchema.SCHEMA} (a typed topic's: its storage columns)
   *     whose first row is at {@code position},
   *     owned by the caller; null when {@code position} is on the SPU (or at {@code end})
   * @throws FluvioException {@code OFFSET_OUT_OF_RANGE}: the tier does not hold {@code
   *     position} (tier retention); {@code STORAGE}, {@code CORRUPT_FRAME}: as {@link
   *     TierFileReader}
   */
  public VectorSchemaRoot next(long position, long end, int maxRows, BufferAllocator allocator) {
    if (file != null && (file.position() != position || position >= fileStop)) {
      closeFile();
    }
    if (file == null && !open(position, end)) {
      return null;
    }
    int rows = (int) Math.min(Math.min(maxRows, MAX_BATCH_ROWS), fileStop - position);
    VectorSchemaRoot root = file.next(rows, allocator);
    if (root == null) {
      throw new FluvioException(
          ErrorCode.CORRUPT_FRAME,
          "%s/%d: a tier file ends at offset %d, before its manifest's %d".formatted(topic, partition, position, fileStop));
    }
    return root;
  }

  /** Open the file holding {@code position}; false when {@code position} is on the SPU. */
  private boolean open(long position, long end) {
    PartitionOffsets offsets = client.fetchOffsets(topic, partition, null);
    long stop = Math.min(end, offsets.logStart());
    if (position >= stop) {
      return false;
    }
    TierManifest manifest = TierFiles.loadManifest(tierUrl, partition, conf);
    List<TierEntry> entries;
    try {
      entries = manifest.covering(position, position + 1);
    } catch (FluvioException e) {
      String held = manifest.files().isEmpty()
          ? "nothing"
          : "[%d, %d)".formatted(manifest.startOffset(), manifest.endOffset());
      throw new FluvioException(
          ErrorCode.OFFSET_OUT_OF_RANGE,
          "%s-%d: offset %d is below the log start %d and not in the tier %s, which holds %s"
              .formatted(topic, partition, position, offsets.logStart(), tierUrl, held));
    }
    TierEntry entry = entries.get(0);
    file = TierFileReader.open(tierUrl, entry, schema, conf);
    try {
      file.skip(position - entry.baseOffset());
    } catch (RuntimeException e) {
      closeFile();
      throw e;
    }
    fileStop = Math.min(entry.nextOffset(), stop);
    return true;
  }

  private void closeFile() {
    if (file != null) {
      TierFileReader f = file;
      file = null;
      f.close();
    }
  }

  @Override
  public void close() {
    closeFile();
  }
}

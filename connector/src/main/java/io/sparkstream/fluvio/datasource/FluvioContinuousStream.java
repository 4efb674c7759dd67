package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import io.sparkstream.fluvio.tier.TierFiles;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * {@code Trigger.Continuous}: one long-running task per topic partition, each reading a
 * {@code STREAM_FETCH} stream row by row ({@link FluvioRowStreamReader}); Spark records
 * the tasks' positions each epoch and merges them into the offset it checkpoints, in the
 * same JSON as micro-batches ({@link FluvioOffset}), so a query may switch triggers.
 *
 * <p>Partitions that appear (a topic the options name created, or a restart with more
 * topics) make {@link #needsReconfiguration} true; Spark then restarts the tasks from the
 * last offsets and {@link #planInputPartitions} adds the new ones at their log start.
 *
 * <p>With {@code progressGroup}, each epoch Spark commits is mirrored into the group, and
 * each (re)planning claims it and mirrors its start ({@link ProgressMirror}).
 */
final class FluvioContinuousStream implements ContinuousStream {
  private final StreamOptions options;
  private final StructType readSchema;
  private final FluvioMicroBatchStream driver;
  private List<TopicPartition> planned = List.of();

  FluvioContinuousStream(StreamOptions options, StructType readSchema) {
    if (options.minRecordsPerTrigger() != null) { // as in real-time mode: epochs have no size
      throw new io.sparkstream.fluvio.errors.FluvioException(
          io.sparkstream.fluvio.errors.ErrorCode.DATA_SOURCE_OPTION,
          "option 'minOffsetsPerTrigger' is not supported in continuous mode: its epochs last a time, not a size");
    }
    this.options = options;
    this.readSchema = readSchema;
    this.driver = new FluvioMicroBatchStream(options, readSchema);
  }

  @Override
  public String toString() {
    return "FluvioContinuousStream" + options.read().topics();
  }

  @Override
  public Offset initialOffset() {
    return driver.initialOffset();
  }

  @Override
  public Offset deserializeOffset(String json) {
    return FluvioOffset.parse(json);
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start) {
    driver.mirrorStart(((FluvioOffset) start).offsets()); // progressGroup: claim, mirror
    try (LeaderClient client = new LeaderClient(options.read().endpoint(), FluvioScan.TIMEOUT_MS, options.read().token())) {
      planned = driver.subscribed(client, false);
    }
    return FluvioMicroBatchStream.streamPartitions(((FluvioOffset) start).offsets(), planned);
  }

  @Override
  public ContinuousPartitionReaderFactory createContinuousReaderFactory() {
    return new FluvioContinuousReaderFactory(
        options.read(), readSchema, new SerializableConfiguration(TierFiles.sessionConf()));
  }

  @Override
  public Offset mergeOffsets(PartitionOffset[] offsets) {
    return FluvioMicroBatchStream.merge(offsets);
  }

  @Override
  public boolean needsReconfiguration() {
    try (LeaderClient client = new LeaderClient(options.read().endpoint(), FluvioScan.TIMEOUT_MS, options.read().token())) {
      return !driver.subscribed(client, false).equals(planned);
    } catch (RuntimeException e) {
      return false; // the SC unreachable for now: keep the tasks running, ask again later
    }
  }

  /** Mirror the epoch's end into the {@code progressGroup} (if set); never fails. */
  @Override
  public void commit(Offset end) {
    driver.commit(end);
  }

  @Override
  public void stop() {
    // No connection outlives a call on the driver; the tasks close their streams.
  }
}

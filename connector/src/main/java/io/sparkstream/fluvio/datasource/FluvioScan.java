package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.Metadata;
import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * A batch read: on the driver, resolves each partition's start and end offsets (asking its
 * leader for the log start and end, or the offset of a time) and plans one input
 * partition per topic partition with records to read.
 */
final class FluvioScan implements Scan, Batch {
  static final int TIMEOUT_MS = 30_000;

  private final ReaderOptions options;
  private final StructType readSchema;

  FluvioScan(ReaderOptions options, StructType readSchema) {
    this.options = options;
    this.readSchema = readSchema;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return "fluvio JVM scan of " + options.topics();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return ColumnarSupportMode.SUPPORTED;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<InputPartition> planned = new ArrayList<>();
    try (LeaderClient client = new LeaderClient(options.endpoint(), TIMEOUT_MS)) {
      for (String topic : options.topics()) {
        Metadata metadata = client.metadata(topic);
        for (int p = 0; p < metadata.partitionCount(); p++) {
          if (options.partitions() != null && !options.partitions().contains(p)) {
            continue;
          }
          PartitionOffsets now = client.fetchOffsets(topic, p, null);
          long start = resolve(client, options.starting(), topic, p, now);
          long end = resolve(client, options.ending(), topic, p, now);
          if (start < now.logStart() && options.failOnDataLoss()) {
            throw new FluvioException(
                ErrorCode.DATA_LOSS,
                "%s/%d: offsets %d..%d were removed by retention (log starts at %d); "
                        .formatted(topic, p, start, now.logStart() - 1, now.logStart())
                    + "set failOnDataLoss=false to read what remains");
          }
          start = Math.max(start, now.logStart());
          if (start < end) {
            planned.add(new FluvioInputPartition(topic, p, start, end));
          }
        }
      }
    }
    return planned.toArray(new InputPartition[0]);
  }

  private long resolve(LeaderClient client, OffsetSpec spec, String topic, int p, PartitionOffsets now) {
    long end = now.end(options.isolation());
    if (spec.timestampMs() != null) {
      PartitionOffsets at = client.fetchOffsets(topic, p, spec.timestampMs() * 1000);
      return at.offset() < 0 ? end : Math.min(at.offset(), end);
    }
    long offset = spec.forPartition(topic, p);
    if (offset == OffsetSpec.EARLIEST) {
      return now.logStart();
    }
    if (offset == OffsetSpec.LATEST) {
      return end;
    }
    return Math.min(offset, end);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new FluvioReaderFactory(options, readSchema);
  }
}

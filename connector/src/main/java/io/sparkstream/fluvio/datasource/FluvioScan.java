package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.Metadata;
import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    List<FluvioInputPartition> planned = new ArrayList<>();
    try (LeaderClient client = new LeaderClient(options.endpoint(), TIMEOUT_MS)) {
      Map<String, PartitionOffsets> offsets = new LinkedHashMap<>();
      for (String topic : options.topics()) {
        Metadata metadata = metadataOf(client, topic);
        for (int p : Planning.partitions(topic, metadata.partitionCount(), options.partitions())) {
          offsets.put(topic + "/" + p, client.fetchOffsets(topic, p, null));
        }
      }
      Planning.checkNamed(options.starting(), "startingOffsets", offsets.keySet());
      Planning.checkNamed(options.ending(), "endingOffsets", offsets.keySet());
      for (Map.Entry<String, PartitionOffsets> e : offsets.entrySet()) {
        int slash = e.getKey().lastIndexOf('/');
        String topic = e.getKey().substring(0, slash);
        int p = Integer.parseInt(e.getKey().substring(slash + 1));
        PartitionOffsets now = e.getValue();
        long start = resolve(client, options.starting(), "startingOffsets", topic, p, now);
        long end = resolve(client, options.ending(), "endingOffsets", topic, p, now);
        if (start < end) {
          planned.add(new FluvioInputPartition(topic, p, start, end));
        }
      }
    }
    return Planning.ranges(planned, options.minPartitions()).toArray(new InputPartition[0]);
  }

  static Metadata metadataOf(LeaderClient client, String topic) {
    try {
      return client.metadata(topic);
    } catch (FluvioException e) {
      if (e.code() == ErrorCode.UNKNOWN_TOPIC) {
        throw new FluvioException(
            ErrorCode.DATA_SOURCE_OPTION,
            "option 'topic(s)': topic %s does not exist".formatted(ReaderOptions.pyRepr(topic)));
      }
      throw e;
    }
  }

  private long resolve(
      LeaderClient client, OffsetSpec spec, String name, String topic, int p, PartitionOffsets now) {
    long atTime = -1;
    if (spec.timestampMs() != null) {
      atTime = client.fetchOffsets(topic, p, spec.timestampMs() * 1000).offset();
    }
    return Planning.resolve(
        spec, name, topic, p, now, now.end(options.isolation()), atTime,
        options.failOnDataLoss(), options.isolation().wireName());
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new FluvioReaderFactory(options, readSchema);
  }
}

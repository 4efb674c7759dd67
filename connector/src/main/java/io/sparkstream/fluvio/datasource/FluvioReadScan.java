package io.sparkstream.fluvio.datasource;

import java.util.LinkedHashSet;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/**
 * The scan Spark gets from {@link FluvioScanBuilder}. A batch read and a stream take
 * different options ({@code endingOffsets} against {@code maxRecordsPerTrigger}, and a
 * different default start), and Spark says which it wants only when it asks for a {@code
 * Batch} or a stream, so the options are parsed then, for that mode (at query start, on
 * the driver), as Python parses them in {@code reader()} or {@code streamReader()}.
 */
final class FluvioReadScan implements Scan {
  private final Map<String, String> options;
  private final StructType readSchema;
  private final Supplier<FluvioScan> batch;
  private final String pushed;

  FluvioReadScan(
      Map<String, String> options,
      StructType readSchema,
      RangeFilter.Split pushed,
      Supplier<FluvioScan> batch) {
    this.options = options;
    this.readSchema = readSchema;
    this.pushed = FluvioScan.pushedDescription(pushed);
    this.batch = batch;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    // The topics as named (parsing fully needs the mode, which the plan may not know yet).
    Map<String, String> named = ReaderOptions.canonicalNames(options);
    String raw = named.getOrDefault("topic", named.getOrDefault("topics", ""));
    LinkedHashSet<String> topics = new LinkedHashSet<>();
    for (String t : raw.split(",")) {
      if (!t.isBlank()) {
        topics.add(t.strip());
      }
    }
    return FluvioScan.describe(topics.stream().toList(), named.get("topicPattern"), pushed);
  }

  @Override
  public Batch toBatch() {
    return batch.get();
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    return new FluvioMicroBatchStream(StreamOptions.parse(options), readSchema);
  }

  @Override
  public ContinuousStream toContinuousStream(String checkpointLocation) {
    return new FluvioContinuousStream(StreamOptions.parse(options), readSchema);
  }

  /** Per partition: ranges are columnar, the unbounded partitions of real-time mode rows. */
  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return ColumnarSupportMode.PARTITION_DEFINED;
  }
}

package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.Metadata;
import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.tier.TierFiles;
import io.sparkstream.fluvio.tier.TierPrefix;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * A batch read: on the driver, resolves each partition's start and end offsets (asking its
 * leader for the log start and end, or the offset of a time) and plans one input
 * partition per topic partition with records to read.
 */
final class FluvioScan implements Scan, Batch {
  static final int TIMEOUT_MS = 30_000;

  private final ReaderOptions options;
  private final StructType readSchema;
  private final RangeFilter filter;
  private final String pushedDescription;

  FluvioScan(ReaderOptions options, StructType readSchema) {
    this(options, readSchema, RangeFilter.split(new org.apache.spark.sql.connector.expressions.filter.Predicate[0]));
  }

  FluvioScan(ReaderOptions options, StructType readSchema, RangeFilter.Split pushed) {
    this.options = options;
    this.readSchema = readSchema;
    this.filter = pushed.filter();
    this.pushedDescription = pushedDescription(pushed);
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return describe(options.topics(), options.topicPattern(), pushedDescription);
  }

  /** The plan's text for a scan: what it reads, and the predicates it turned into ranges. */
  static String describe(List<String> topics, String pattern, String pushed) {
    return "fluvio JVM scan of " + (pattern == null ? topics.toString() : "pattern " + pattern) + pushed;
  }

  /** {@code " where [...]"} for the predicates turned into ranges, or empty. */
  static String pushedDescription(RangeFilter.Split pushed) {
    return pushed.pushed().isEmpty() ? "" : " where " + pushed.pushed();
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
    try (LeaderClient client = new LeaderClient(options.endpoint(), TIMEOUT_MS, options.token())) {
      Map<String, PartitionOffsets> offsets = new LinkedHashMap<>();
      Configuration hadoopConf = TierFiles.sessionConf();
      boolean byPattern = options.topicPattern() != null;
      List<String> topics =
          byPattern ? client.topicNames().stream().filter(options::matches).toList() : options.topics();
      for (String topic : topics) {
        Metadata metadata;
        try {
          metadata = metadataOf(client, topic);
        } catch (FluvioException e) {
          if (byPattern && e.code() == ErrorCode.DATA_SOURCE_OPTION) {
            continue; // deleted since it was listed: a pattern does not insist on it
          }
          throw e;
        }
        List<Integer> wanted = options.partitionsOf(topic);
        if (byPattern && wanted != null) { // a pattern reads what each match has of them
          wanted = wanted.stream().filter(p -> p < metadata.partitionCount()).toList();
        }
        for (int p : Planning.partitions(topic, metadata.partitionCount(), wanted, options.partitionsOption())) {
          offsets.put(topic + "/" + p, TierPrefix.readableOffsets(client, topic, p, hadoopConf));
        }
      }
      Planning.checkNamed(options.starting(), options.starting().optionName("startingOffsets", "startingTimestamp"), offsets.keySet());
      Planning.checkNamed(options.ending(), options.ending().optionName("endingOffsets", "endingTimestamp"), offsets.keySet());
      Map<String, Long> committed = groupOffsets(client, options.starting(), offsets.keySet());
      for (Map.Entry<String, PartitionOffsets> e : offsets.entrySet()) {
        int slash = e.getKey().lastIndexOf('/');
        String topic = e.getKey().substring(0, slash);
        int p = Integer.parseInt(e.getKey().substring(slash + 1));
        if (!filter.readsPartition(p)) {
          continue; // after the option checks, so a pushed predicate hides no bad option
        }
        PartitionOffsets now = e.getValue();
        OffsetSpec starting = options.starting();
        Long fromGroup = committed.get(e.getKey());
        if (fromGroup != null) { // the group's offset, checked as a JSON one would be
          starting = new OffsetSpec(OffsetSpec.EARLIEST, List.of(new OffsetSpec.Specific(topic, p, fromGroup)), null);
        }
        long start =
            fromGroup != null && fromGroup > now.end(options.isolation())
                ? fromGroup // past the end: kept (nothing to read yet), as in Python
                : resolve(client, starting, starting.optionName("startingOffsets", "startingTimestamp"), topic, p, now);
        start = Math.max(start, filter.offsetFrom());
        String endName = options.ending().optionName("endingOffsets", "endingTimestamp");
        long end = Math.min(resolve(client, options.ending(), endName, topic, p, now), filter.offsetTo());
        if (start < end && filter.timestampFromUs() != null) {
          long atTime = client.fetchOffsets(topic, p, filter.timestampFromUs()).offset();
          start = atTime < 0 ? end : Math.max(start, atTime); // none that new: nothing to read
        }
        if (start < end) {
          planned.add(new FluvioInputPartition(topic, p, start, end));
        }
      }
    }
    return Planning.ranges(planned, options.minPartitions()).toArray(new InputPartition[0]);
  }

  /**
   * The committed offsets of the group {@code startingOffsets=group:NAME} names ({@code
   * group_offsets} of {@code datasource/resolve.py}); empty for other specs.
   */
  static Map<String, Long> groupOffsets(
      LeaderClient client, OffsetSpec spec, java.util.Set<String> partitions) {
    if (spec.group() == null) {
      return Map.of();
    }
    try {
      return client.committedOffsets(spec.group(), partitions);
    } catch (FluvioException e) {
      if (e.code() == ErrorCode.UNKNOWN_GROUP) {
        throw new FluvioException(
            ErrorCode.DATA_SOURCE_OPTION,
            "option 'startingOffsets': consumer group %s does not exist"
                .formatted(ReaderOptions.pyRepr(spec.group())));
      }
      throw e;
    }
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
    Long ms = spec.timeFor(topic, p);
    if (ms != null) {
      atTime = client.fetchOffsets(topic, p, ms * 1000).offset();
    }
    return Planning.resolve(
        spec, name, topic, p, now, now.end(options.isolation()), atTime,
        options.failOnDataLoss(), options.isolation().wireName());
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new FluvioReaderFactory(options, readSchema, new SerializableConfiguration(TierFiles.sessionConf()));
  }
}

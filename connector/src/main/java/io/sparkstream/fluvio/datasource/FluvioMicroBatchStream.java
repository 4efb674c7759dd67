package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.FetchResult;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.tier.TierFiles;
import io.sparkstream.fluvio.tier.TierPrefix;
import io.sparkstream.fluvio.records.BatchFrames;
import io.sparkstream.fluvio.records.FrameSlice;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.logging.Logger;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * {@code spark.readStream.format("fluvio")} in micro-batches, as {@code FluvioStreamReader}
 * of {@code datasource/reader.py} does it, with the same offsets JSON ({@link
 * FluvioOffset}).
 *
 * <p>Each trigger Spark asks {@code latestOffset(start, limit)}: the visible end of every
 * partition (HW when committed, LEO when uncommitted), cut by the read limit ({@code
 * maxRecordsPerTrigger}/{@code maxBytesPerTrigger}) or the {@code availableNow} target,
 * never below {@code start}. Partitions that appear mid-query are read from their log
 * start; a {@code start} below a partition's log start is data loss. The columnar batch
 * reader reads each planned range. The only state (the {@code availableNow} target, the
 * last visible ends for metrics, the {@code progressGroup} mirror) lives in this driver
 * object; the offsets are Spark's checkpoint's.
 *
 * <p>With {@code progressGroup} the committed position is mirrored into a progress-only
 * consumer group ({@link ProgressMirror}): each {@code commit(end)}, and the {@code start}
 * of each {@code latestOffset} (real-time mode: of each planning), claimed there first.
 *
 * <p>Real-time mode ({@code trigger(realTime=...)}) plans one row-reading task per
 * partition from the batch's start without an end ({@link FluvioRowStreamReader}); Spark
 * merges where the tasks stopped into the batch's end offset. Per-trigger limits have no
 * meaning there and are refused at query start, as Kafka's source refuses its own.
 */
final class FluvioMicroBatchStream
    implements MicroBatchStream, SupportsTriggerAvailableNow, ReportsSourceMetrics, SupportsRealTimeMode {
  private static final Logger LOG = Logger.getLogger(FluvioMicroBatchStream.class.getName());

  private final StreamOptions options;
  private final StructType readSchema;
  private Map<TopicPartition, Long> target;
  private Map<TopicPartition, Long> lastVisible;
  private final ProgressMirror progress;
  private long lastTriggerMs; // minOffsetsPerTrigger: when a trigger last ran (0: none yet)

  FluvioMicroBatchStream(StreamOptions options, StructType readSchema) {
    this.options = options;
    this.readSchema = readSchema;
    this.progress =
        options.progressGroup() == null ? null : new ProgressMirror(options.progressGroup(), options.read().endpoint(), options.read().token());
  }

  private ReaderOptions read() {
    return options.read();
  }

  @Override
  public String toString() {
    return "FluvioMicroBatchStream" + read().topics();
  }

  // -- offsets -------------------------------------------------------------------------

  @Override
  public Offset initialOffset() {
    try (LeaderClient client = new LeaderClient(read().endpoint(), FluvioScan.TIMEOUT_MS, read().token())) {
      Map<TopicPartition, PartitionOffsets> now = offsetsOf(client, subscribed(client, true));
      OffsetSpec spec = read().starting();
      String name = spec.optionName("startingOffsets", "startingTimestamp");
      java.util.Set<String> names = new java.util.HashSet<>();
      now.keySet().forEach(tp -> names.add(tp.toString()));
      Planning.checkNamed(spec, name, names);
      Map<String, Long> committed = FluvioScan.groupOffsets(client, spec, names);
      Map<TopicPartition, Long> out = new LinkedHashMap<>();
      for (Map.Entry<TopicPartition, PartitionOffsets> e : now.entrySet()) {
        TopicPartition tp = e.getKey();
        PartitionOffsets off = e.getValue();
        long end = off.end(read().isolation());
        OffsetSpec from = spec;
        Long fromGroup = committed.get(tp.toString());
        if (fromGroup != null) { // the group's offset, checked as a JSON one would be
          if (fromGroup > end) {
            out.put(tp, fromGroup); // past the end: kept (nothing to read yet), as in Python
            continue;
          }
          from = new OffsetSpec(OffsetSpec.EARLIEST,
              List.of(new OffsetSpec.Specific(tp.topic(), tp.partition(), fromGroup)), null);
        }
        long atTime = -1;
        Long ms = from.timeFor(tp.topic(), tp.partition());
        if (ms != null) {
          atTime = client.fetchOffsets(tp.topic(), tp.partition(), ms * 1000).offset();
        }
        out.put(tp, Planning.resolve(from, name, tp.topic(), tp.partition(), off,
            end, atTime, read().failOnDataLoss(), read().isolation().wireName()));
      }
      return new FluvioOffset(out);
    }
  }

  @Override
  public Offset deserializeOffset(String json) {
    return FluvioOffset.parse(json);
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(start, limit) is the one Spark calls");
  }

  @Override
  public Offset latestOffset(Offset startOffset, ReadLimit limit) {
    Map<TopicPartition, Long> begin = ((FluvioOffset) startOffset).offsets();
    mirrorStart(begin);
    try (LeaderClient client = new LeaderClient(read().endpoint(), FluvioScan.TIMEOUT_MS, read().token())) {
      Map<TopicPartition, PartitionOffsets> now = offsetsOf(client, subscribed(client, false));
      Map<TopicPartition, Long> base = new LinkedHashMap<>();
      Map<TopicPartition, Long> latest = new LinkedHashMap<>();
      Map<TopicPartition, Long> visible = new LinkedHashMap<>();
      for (Map.Entry<TopicPartition, PartitionOffsets> e : now.entrySet()) {
        TopicPartition tp = e.getKey();
        PartitionOffsets off = e.getValue();
        long end = off.end(read().isolation());
        visible.put(tp, end);
        if (begin.containsKey(tp)) {
          base.put(tp, checkedBegin(tp, begin.get(tp), off));
          latest.put(tp, Math.max(begin.get(tp), end));
        } else {
          base.put(tp, off.logStart());
          latest.put(tp, Math.max(off.logStart(), end));
        }
      }
      lastVisible = visible;
      if (target != null) {
        for (TopicPartition tp : new ArrayList<>(latest.keySet())) {
          Long cap = target.get(tp);
          if (cap == null && !begin.containsKey(tp)) {
            latest.remove(tp);
            base.remove(tp);
            continue;
          }
          long from = begin.containsKey(tp) ? begin.get(tp) : base.get(tp);
          latest.put(tp, Math.max(from, Math.min(latest.get(tp), cap == null ? 0 : cap)));
        }
      }
      if (waits(base, latest)) {
        return startOffset; // too few new records and the delay not over: no batch yet
      }
      latest = applyLimit(client, base, latest, limit);
      for (Map.Entry<TopicPartition, Long> e : begin.entrySet()) {
        latest.putIfAbsent(e.getKey(), e.getValue()); // a partition that vanished keeps its offset
      }
      return new FluvioOffset(latest);
    }
  }

  /**
   * {@code minOffsetsPerTrigger}: whether this trigger waits for more records (never under
   * {@code availableNow}, whose run must end), as {@code _waits} of {@code datasource/reader.py}.
   */
  private boolean waits(Map<TopicPartition, Long> base, Map<TopicPartition, Long> latest) {
    Long minimum = options.minRecordsPerTrigger();
    if (minimum == null || target != null) {
      return false;
    }
    long newRows = 0;
    for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
      newRows += Math.max(0, e.getValue() - base.get(e.getKey()));
    }
    long now = System.currentTimeMillis();
    if (StreamLimits.delayBatch(minimum, newRows, now, lastTriggerMs, options.maxTriggerDelayMs())) {
      return true;
    }
    lastTriggerMs = now;
    return false;
  }

  private long checkedBegin(TopicPartition tp, long begin, PartitionOffsets off) {
    if (begin >= off.logStart()) {
      return begin;
    }
    String message = "%s: the query's next offset %d is below the log start %d: %d records were removed by retention before they were read"
        .formatted(tp, begin, off.logStart(), off.logStart() - begin);
    if (read().failOnDataLoss()) {
      throw new FluvioException(ErrorCode.DATA_LOSS, message + "; set failOnDataLoss=false to skip them");
    }
    LOG.warning(message + "; skipping them (failOnDataLoss=false)");
    return off.logStart();
  }

  private Map<TopicPartition, Long> applyLimit(
      LeaderClient client, Map<TopicPartition, Long> base, Map<TopicPartition, Long> latest, ReadLimit limit) {
    if (limit instanceof ReadAllAvailable || !(limit instanceof ReadMaxRows || limit instanceof ReadMaxBytes)) {
      return latest; // all, or limits this source does not offer: read what is there
    }
    // The engine's limit, plus the other one configured in the options.
    Long maxRows = limit instanceof ReadMaxRows rows ? Long.valueOf(rows.maxRows()) : options.maxRecordsPerTrigger();
    Long maxBytes = limit instanceof ReadMaxBytes bytes ? Long.valueOf(bytes.maxBytes()) : options.maxBytesPerTrigger();
    Map<TopicPartition, Long> clamped = new LinkedHashMap<>();
    latest.forEach((tp, end) -> clamped.put(tp, Math.min(base.get(tp), end)));
    if (maxRows != null) {
      latest = StreamLimits.limitRows(clamped, latest, maxRows);
    }
    if (maxBytes != null) {
      latest = limitBytes(client, clamped, latest, maxBytes);
    }
    return latest;
  }

  /**
   * Cut each partition's range at whole stored frames within its share of the byte budget
   * (at least one frame, so a large frame cannot stall the query).
   */
  private Map<TopicPartition, Long> limitBytes(
      LeaderClient client, Map<TopicPartition, Long> base, Map<TopicPartition, Long> latest, long maxBytes) {
    Map<TopicPartition, Long> backlog = new LinkedHashMap<>();
    latest.forEach((tp, end) -> backlog.put(tp, end - base.get(tp)));
    Map<TopicPartition, Long> shares = StreamLimits.prorate(maxBytes, backlog);
    Map<TopicPartition, Long> out = new LinkedHashMap<>(latest);
    for (Map.Entry<TopicPartition, Long> e : shares.entrySet()) {
      TopicPartition tp = e.getKey();
      long share = e.getValue();
      if (backlog.get(tp) <= 0) {
        continue;
      }
      if (share <= 0) {
        out.put(tp, base.get(tp));
        continue;
      }
      long used = 0;
      long end = base.get(tp);
      long stop = latest.get(tp);
      long position = base.get(tp);
      int ask = (int) Math.min(share, Integer.MAX_VALUE);
      scan:
      while (position < stop) {
        FetchResult fetched = client.fetch(tp.topic(), tp.partition(), position, ask, read().isolation());
        List<FrameSlice> frames = BatchFrames.split(fetched.frames(), false);
        if (frames.isEmpty()) {
          break;
        }
        for (FrameSlice frame : frames) {
          long length = frame.header().frameLength();
          if (used > 0 && used + length > share) {
            break scan;
          }
          used += length;
          end = Math.min(frame.header().nextOffset(), stop);
          if (end >= stop) {
            break scan;
          }
        }
        position = frames.get(frames.size() - 1).header().nextOffset();
      }
      out.put(tp, Math.max(end, base.get(tp)));
    }
    return out;
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    if (options.maxRecordsPerTrigger() != null) {
      return ReadLimit.maxRows(options.maxRecordsPerTrigger());
    }
    if (options.maxBytesPerTrigger() != null) {
      return ReadLimit.maxBytes(options.maxBytesPerTrigger());
    }
    return ReadLimit.allAvailable();
  }

  @Override
  public Offset reportLatestOffset() {
    if (lastVisible == null) {
      lastVisible = visibleEnds();
    }
    return new FluvioOffset(lastVisible);
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    target = visibleEnds();
  }

  /**
   * Records behind the visible ends last seen, over the partitions of the last consumed
   * offset (Kafka's {@code minOffsetsBehindLatest}, {@code maxOffsetsBehindLatest}, {@code
   * avgOffsetsBehindLatest}); empty before the first batch.
   */
  @Override
  public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
    if (latestConsumedOffset.isEmpty() || lastVisible == null) {
      return Map.of();
    }
    Map<TopicPartition, Long> consumed = ((FluvioOffset) latestConsumedOffset.get()).offsets();
    return behindLatest(consumed, lastVisible);
  }

  /** The metrics of {@link #metrics} (pure). */
  static Map<String, String> behindLatest(Map<TopicPartition, Long> consumed, Map<TopicPartition, Long> visible) {
    List<Long> behind = new ArrayList<>();
    visible.forEach((tp, end) -> {
      Long at = consumed.get(tp);
      behind.add(Math.max(0, end - (at == null ? 0 : at)));
    });
    if (behind.isEmpty()) {
      return Map.of();
    }
    Map<String, String> out = new HashMap<>();
    out.put("minOffsetsBehindLatest", String.valueOf(behind.stream().mapToLong(Long::longValue).min().orElse(0)));
    out.put("maxOffsetsBehindLatest", String.valueOf(behind.stream().mapToLong(Long::longValue).max().orElse(0)));
    out.put("avgOffsetsBehindLatest", String.valueOf(behind.stream().mapToLong(Long::longValue).average().orElse(0)));
    return out;
  }

  private Map<TopicPartition, Long> visibleEnds() {
    try (LeaderClient client = new LeaderClient(read().endpoint(), FluvioScan.TIMEOUT_MS, read().token())) {
      Map<TopicPartition, Long> ends = new TreeMap<>(FluvioOffset.ORDER);
      offsetsOf(client, subscribed(client, false)).forEach((tp, off) -> ends.put(tp, off.end(read().isolation())));
      return ends;
    }
  }

  // -- planning and reading ----------------------------------------------------------

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    Map<TopicPartition, Long> begin = ((FluvioOffset) start).offsets();
    List<FluvioInputPartition> ranges = new ArrayList<>();
    for (Map.Entry<TopicPartition, Long> e : ((FluvioOffset) end).offsets().entrySet()) {
      TopicPartition tp = e.getKey();
      long from = begin.getOrDefault(tp, 0L);
      if (e.getValue() > from) {
        // A partition new since start begins at its log start, wherever that is now.
        ranges.add(new FluvioInputPartition(tp.topic(), tp.partition(), from, e.getValue(), !begin.containsKey(tp)));
      }
    }
    return Planning.ranges(ranges, read().minPartitions()).toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new FluvioStreamReaderFactory(read(), readSchema, new SerializableConfiguration(TierFiles.sessionConf()));
  }

  // -- real-time mode ------------------------------------------------------------------

  @Override
  public void prepareForRealTimeMode() {
    for (String name : List.of("maxRecordsPerTrigger", "maxBytesPerTrigger", "minOffsetsPerTrigger")) {
      Long limit = switch (name) {
        case "maxRecordsPerTrigger" -> options.maxRecordsPerTrigger();
        case "maxBytesPerTrigger" -> options.maxBytesPerTrigger();
        default -> options.minRecordsPerTrigger();
      };
      if (limit != null) {
        throw new FluvioException(ErrorCode.DATA_SOURCE_OPTION,
            "option '%s' is not supported in real-time mode: its batches last a time, not a size"
                .formatted(name));
      }
    }
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start) {
    mirrorStart(((FluvioOffset) start).offsets());
    List<TopicPartition> now;
    try (LeaderClient client = new LeaderClient(read().endpoint(), FluvioScan.TIMEOUT_MS, read().token())) {
      now = subscribed(client, false);
    }
    return streamPartitions(((FluvioOffset) start).offsets(), now);
  }

  @Override
  public Offset mergeOffsets(PartitionOffset[] offsets) {
    return merge(offsets);
  }

  /** One unbounded partition per subscribed one; a partition new to the query starts at its log start. */
  static InputPartition[] streamPartitions(Map<TopicPartition, Long> start, List<TopicPartition> subscribed) {
    List<InputPartition> out = new ArrayList<>();
    for (TopicPartition tp : subscribed) {
      Long from = start.get(tp);
      out.add(new FluvioStreamPartition(tp.topic(), tp.partition(), from == null ? 0 : from, from == null));
    }
    return out.toArray(new InputPartition[0]);
  }

  /** The stream offset of the tasks' positions. */
  static FluvioOffset merge(PartitionOffset[] offsets) {
    Map<TopicPartition, Long> out = new LinkedHashMap<>();
    for (PartitionOffset o : offsets) {
      FluvioPartitionOffset p = (FluvioPartitionOffset) o;
      out.put(new TopicPartition(p.topic(), p.partition()), p.offset());
    }
    return new FluvioOffset(out);
  }

  /**
   * Mirror the committed end into the {@code progressGroup} (if set); never fails. The
   * query's offsets live in Spark's checkpoint; the group only shows them.
   */
  @Override
  public void commit(Offset end) {
    if (progress != null) {
      progress.mirror(((FluvioOffset) end).offsets());
    }
  }

  /**
   * Claim the {@code progressGroup} (if set) and mirror {@code start}: where the last
   * committed batch or epoch ended. Spark calls {@code commit(end)} of a batch only when it
   * plans the next, so without this the lag would stay above 0 while the query idles.
   *
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: the group is a group of members
   */
  void mirrorStart(Map<TopicPartition, Long> start) {
    if (progress != null) {
      progress.claim();
      progress.mirror(start);
    }
  }

  @Override
  public void stop() {
    // No connection outlives a call.
  }

  // -- driver lookups ------------------------------------------------------------------

  /** The partitions the options select now; strict (query start) fails on missing names. */
  List<TopicPartition> subscribed(LeaderClient client, boolean strict) {
    List<TopicPartition> out = new ArrayList<>();
    boolean byPattern = read().topicPattern() != null;
    List<String> topics =
        byPattern ? client.topicNames().stream().filter(read()::matches).toList() : read().topics();
    for (String topic : topics) {
      int count;
      try {
        count = FluvioScan.metadataOf(client, topic).partitionCount();
      } catch (FluvioException e) {
        if ((strict && !byPattern) || e.code() != ErrorCode.DATA_SOURCE_OPTION) {
          throw e;
        }
        continue;
      }
      List<Integer> indexes;
      if (strict && !byPattern) { // a pattern reads what each match has of them
        indexes = Planning.partitions(topic, count, read().partitionsOf(topic), read().partitionsOption());
      } else {
        indexes = new ArrayList<>();
        List<Integer> wanted = read().partitionsOf(topic);
        for (int p = 0; p < count; p++) {
          if (wanted == null || wanted.contains(p)) {
            indexes.add(p);
          }
        }
      }
      indexes.forEach(p -> out.add(new TopicPartition(topic, p)));
    }
    return out;
  }

  private static Map<TopicPartition, PartitionOffsets> offsetsOf(LeaderClient client, List<TopicPartition> tps) {
    Map<TopicPartition, PartitionOffsets> out = new TreeMap<>(FluvioOffset.ORDER);
    Configuration hadoopConf = TierFiles.sessionConf();
    for (TopicPartition tp : tps) {
      out.put(tp, TierPrefix.readableOffsets(client, tp.topic(), tp.partition(), hadoopConf));
    }
    return out;
  }
}

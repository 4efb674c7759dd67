package io.sparkstream.fluvio.datasource;

import java.io.Serializable;
import java.util.Map;

/**
 * The reader options of a stream: those of a read (parsed in stream mode, so {@code
 * startingOffsets} defaults to {@code latest} and the ending options are refused) plus
 * the per-trigger limits, with the names and messages of {@code datasource/options.py}.
 *
 * @param read the read options (the ending is unused)
 * @param maxRecordsPerTrigger records per micro-batch ({@code maxOffsetsPerTrigger} is an
 *     alias); null = no limit
 * @param maxBytesPerTrigger stored frame bytes per micro-batch; null = no limit
 * @param progressGroup the consumer group the query's committed offsets are mirrored into
 *     ({@link ProgressMirror}); null = none
 * @param minRecordsPerTrigger {@code minOffsetsPerTrigger}: a micro-batch waits until this
 *     many new records are visible or {@code maxTriggerDelayMs} passed; null = no wait
 * @param maxTriggerDelayMs {@code maxTriggerDelay} (default 15 minutes)
 */
record StreamOptions(
    ReaderOptions read, Long maxRecordsPerTrigger, Long maxBytesPerTrigger, String progressGroup,
    Long minRecordsPerTrigger, long maxTriggerDelayMs)
    implements Serializable {

  /**
   * Parse the options of a stream.
   *
   * @param options the options as Spark passes them (any case)
   * @return the parsed options
   * @throws io.sparkstream.fluvio.errors.FluvioException {@code DATA_SOURCE_OPTION}, naming
   *     the option at fault
   */
  static StreamOptions parse(Map<String, String> options) {
    ReaderOptions read = ReaderOptions.parse(options, true);
    Map<String, String> opts = ReaderOptions.canonicalNames(options);
    Long maxRecords = ReaderOptions.longInteger(opts, "maxRecordsPerTrigger");
    if (maxRecords == null) {
      maxRecords = ReaderOptions.longInteger(opts, "maxOffsetsPerTrigger");
    }
    Long[] wait = ReaderOptions.triggerWait(opts);
    return new StreamOptions(
        read, maxRecords, ReaderOptions.longInteger(opts, "maxBytesPerTrigger"),
        ReaderOptions.progressGroup(opts), wait[0], wait[1]);
  }
}

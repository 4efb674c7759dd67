package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.Compression;
import java.io.Serializable;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * The options of a batch write and a streaming sink, {@code parse_writer_options} of
 * {@code datasource/options.py}: the same names, defaults, checks and messages.
 *
 * @param endpoint the SC's endpoint (option or {@code FLUVIO_ENDPOINT})
 * @param topic the topic to write to, or null to route by the {@code topic} column
 * @param compression the frames' codec, or null for the topic's setting
 * @param batchSize bytes of record data per frame (the cut is by record count too; see
 *     {@link FluvioDataWriter})
 * @param acks {@code all} or {@code leader}
 * @param preservePartitions whether a {@code partition} column routes rows; null when not
 *     given (see {@link SinkColumns})
 * @param token the client token, resolved on the driver as for reads; null: none
 * @param mergeSchema set the topic's schema from the DataFrame's user columns before
 *     writing ({@link SchemaMerge}); needs the {@code topic} option
 */
public record WriterOptions(
    Endpoint endpoint,
    String topic,
    Compression compression,
    int batchSize,
    String acks,
    Boolean preservePartitions,
    String token,
    boolean mergeSchema)
    implements Serializable {

  /** Every writer option name, as in Python. */
  static final List<String> WRITER =
      List.of(
          "endpoint",
          "token",
          "topic",
          "compression",
          "batchSize",
          "acks",
          "preservePartitions",
          "mergeSchema",
          "tls.ca",
          "tls.cert",
          "tls.key");

  private static final int DEFAULT_BATCH_SIZE = 256 * 1024;

  /** The wire value of {@link #acks}: -1 for {@code all}, 1 for {@code leader}. */
  public int acksCode() {
    return acks.equals("all") ? -1 : 1;
  }

  /**
   * Parse the options of a write.
   *
   * @param options the options as Spark passes them (any case)
   * @return the parsed options
   * @throws FluvioException {@code DATA_SOURCE_OPTION}, naming the option at fault
   */
  public static WriterOptions parse(Map<String, String> options) {
    OptionNames.Given given = OptionNames.canonical(options, WRITER, OptionNames.WRITER_ALIASES);
    Map<String, String> opts = given.values();
    String topic = opts.get("topic");
    if (topic != null && topic.isBlank()) {
      throw ReaderOptions.error("option 'topic' must not be empty");
    }
    Endpoint endpoint = ReaderOptions.endpoint(given);
    Compression compression = null;
    if (opts.containsKey("compression")) {
      compression =
          Compression.valueOf(
              ReaderOptions.choice(opts, "compression", List.of("none", "lz4", "zstd"), "none")
                  .toUpperCase(Locale.ROOT));
    }
    Integer batchSize = ReaderOptions.integer(opts, "batchSize", 1);
    String acks = ReaderOptions.choice(opts, "acks", List.of("all", "leader"), "all");
    Boolean preserve =
        opts.containsKey("preservePartitions")
            ? ReaderOptions.bool(opts, "preservePartitions", false)
            : null;
    boolean mergeSchema = ReaderOptions.bool(opts, "mergeSchema", false);
    if (mergeSchema && topic == null) {
      throw ReaderOptions.error(
          "option 'mergeSchema' needs the 'topic' option: it sets that one topic's schema "
              + "(rows routed by a 'topic' column may go to many topics)");
    }
    return new WriterOptions(
        endpoint,
        topic == null ? null : topic.strip(),
        compression,
        batchSize == null || batchSize == 0 ? DEFAULT_BATCH_SIZE : batchSize,
        acks,
        preserve,
        ReaderOptions.token(given, endpoint),
        mergeSchema);
  }
}

package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;

/**
 * {@code progressGroup}: mirror a streaming query's committed offsets into a consumer
 * group, as {@code ProgressMirror} of {@code datasource/progress.py} does (driver side).
 *
 * <p>Spark never joins a group: the checkpoint is the truth, and the mirror only makes the
 * query's progress visible to group tools ({@code fluvio consumer-group describe} shows
 * its lag). It writes a progress-only group ({@code kind: external}) with {@code
 * PROGRESS_COMMIT}:
 *
 * <ul>
 *   <li><b>Claim</b> (before the first batch is planned): an empty write that creates the
 *       group or checks it is one. A group of members is refused there, so the query fails
 *       at its start naming the option ({@code DataSourceOptionError}).
 *   <li><b>Mirror</b>: write the query's committed position exactly, even below what is
 *       stored (a restart from an older checkpoint moves the group back). The stream
 *       mirrors {@code commit(end)} and the {@code start} of each planning call, so the lag
 *       reaches 0 after the last batch too. A write equal to the last one is skipped.
 *   <li><b>Never fail the query</b> otherwise: a failed write is logged as a warning and
 *       kept pending; the next trigger retries it, and newer offsets replace it.
 * </ul>
 */
final class ProgressMirror {
  private static final Logger LOG = Logger.getLogger(ProgressMirror.class.getName());

  /** Writes one {@code PROGRESS_COMMIT}; returns the partitions the SC skipped. */
  @FunctionalInterface
  interface Writer {
    List<String> write(String group, Map<String, Long> offsets);
  }

  private final String group;
  private final Writer writer;
  private boolean claimed;
  private Map<TopicPartition, Long> pending;
  private Map<TopicPartition, Long> written;

  /**
   * A mirror that writes to the SC at {@code endpoint}, one connection per write.
   *
   * @param group the {@code progressGroup} option
   * @param endpoint the SC's public endpoint
   * @param token the client token; null: none
   */
  ProgressMirror(String group, Endpoint endpoint, String token) {
    this(group, (g, offsets) -> {
      try (LeaderClient client = new LeaderClient(endpoint, FluvioScan.TIMEOUT_MS, token)) {
        return client.commitProgress(g, offsets);
      }
    });
  }

  /** A mirror over any writer (tests give one that fails on demand). */
  ProgressMirror(String group, Writer writer) {
    this.group = group;
    this.writer = writer;
  }

  /**
   * Create the progress group or check it is one (once; retried while the SC is away).
   *
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: the group is a group of members
   */
  void claim() {
    if (claimed) {
      return;
    }
    try {
      write(Map.of());
    } catch (FluvioException e) {
      if (e.code() == ErrorCode.GROUP_NOT_EMPTY || e.code() == ErrorCode.INVALID_REQUEST) {
        throw new FluvioException(ErrorCode.DATA_SOURCE_OPTION, "option 'progressGroup': " + e.getMessage());
      }
      // the SC is away: reads fail on their own, retry at the next trigger
      LOG.warning("progressGroup '%s': cannot claim the group yet: %s".formatted(group, e));
      return;
    }
    claimed = true;
  }

  /**
   * Mirror the query's committed position; a failure only logs a warning. {@link #pending}
   * is always the newest position not yet written (null: all written).
   *
   * @param offsets the next offset to read by partition
   */
  void mirror(Map<TopicPartition, Long> offsets) {
    pending = offsets.equals(written) ? null : new LinkedHashMap<>(offsets);
    flush();
  }

  /** Write the pending offsets, if any. */
  void flush() {
    if (pending == null) {
      return;
    }
    try {
      write(pending);
    } catch (FluvioException e) {
      LOG.warning(("progressGroup '%s': offsets not mirrored (retried at the next trigger; the "
          + "query's checkpoint is unaffected): %s").formatted(group, e));
      return;
    }
    written = pending;
    pending = null;
  }

  /** The offsets still to write, or null (for tests). */
  Map<TopicPartition, Long> pending() {
    return pending;
  }

  /** True once the group was created or checked (for tests). */
  boolean claimed() {
    return claimed;
  }

  private void write(Map<TopicPartition, Long> offsets) {
    Map<String, Long> wanted = new LinkedHashMap<>();
    offsets.forEach((tp, offset) -> wanted.put(tp.toString(), offset));
    List<String> skipped;
    try {
      skipped = writer.write(group, wanted);
    } catch (FluvioException e) {
      throw e;
    } catch (RuntimeException e) { // any other failure of the write: never the query's
      throw new FluvioException(ErrorCode.FLUVIO, e.toString(), e);
    }
    if (!skipped.isEmpty()) {
      LOG.info("progressGroup '%s': gone, skipped: %s".formatted(group, skipped));
    }
  }
}

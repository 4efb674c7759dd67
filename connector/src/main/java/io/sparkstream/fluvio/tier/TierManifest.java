package io.sparkstream.fluvio.tier;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The files of one partition in its topic's tier, oldest first, and the pure planning over
 * them: the JVM's copy of {@code spark_stream/tier/manifest.py} (parsing and checks) and
 * {@code plan.py} ({@link #tierStart}, {@link #covering}), with the same messages; the
 * shared vectors ({@code tier_manifests.json}) keep the two in step.
 *
 * <p>The manifest is the truth readers go by: the SPU records a file in it only after the
 * file is in place, and entries are contiguous ({@code base_offset} of each is {@code
 * next_offset} of the one before it).
 *
 * @param partition the partition
 * @param files the entries, contiguous and ascending
 */
public record TierManifest(int partition, List<TierEntry> files) {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> ENTRY_FIELDS =
      Set.of("base_offset", "next_offset", "records", "bytes", "file", "max_timestamp");

  /** An empty manifest: the tier holds nothing of {@code partition} (yet). */
  public static TierManifest empty(int partition) {
    return new TierManifest(partition, List.of());
  }

  /**
   * Parse a manifest file's text.
   *
   * @param text the JSON
   * @param where the file's URL, for messages
   * @return the manifest
   * @throws FluvioException {@code STORAGE}: not a valid manifest (the message names {@code
   *     where})
   */
  public static TierManifest parse(String text, String where) {
    try {
      JsonNode root = JSON.readTree(text);
      if (root == null || !root.isObject()) {
        throw new IllegalArgumentException("not a JSON object");
      }
      int partition = (int) natural(root, "partition");
      List<TierEntry> files = new ArrayList<>();
      JsonNode listed = root.path("files");
      if (!listed.isMissingNode() && !listed.isArray()) {
        throw new IllegalArgumentException("files: not a list");
      }
      for (JsonNode e : listed) {
        files.add(entry(e));
      }
      TierManifest manifest = new TierManifest(partition, List.copyOf(files));
      manifest.checkContiguous();
      return manifest;
    } catch (IOException | IllegalArgumentException e) {
      throw new FluvioException(
          ErrorCode.STORAGE, "%s is not a valid tier manifest: %s".formatted(where, e.getMessage()));
    }
  }

  private static TierEntry entry(JsonNode e) {
    if (!e.isObject()) {
      throw new IllegalArgumentException("an entry is not an object: " + e);
    }
    e.fieldNames().forEachRemaining(name -> {
      if (!ENTRY_FIELDS.contains(name)) {
        throw new IllegalArgumentException("an entry has an unknown field '%s'".formatted(name));
      }
    });
    long base = natural(e, "base_offset");
    long next = natural(e, "next_offset");
    long records = natural(e, "records");
    long bytes = natural(e, "bytes");
    JsonNode file = e.path("file");
    if (!file.isTextual() || file.textValue().isEmpty()) {
      throw new IllegalArgumentException("entry at %d: 'file' is not a path".formatted(base));
    }
    JsonNode ts = e.path("max_timestamp");
    if (next - base != records) {
      throw new IllegalArgumentException(
          "offsets [%d, %d) do not hold %d records".formatted(base, next, records));
    }
    return new TierEntry(base, next, records, bytes, file.textValue(), ts.isIntegralNumber() ? ts.longValue() : -1);
  }

  private static long natural(JsonNode node, String field) {
    JsonNode value = node.path(field);
    if (!value.isIntegralNumber() || value.longValue() < 0) {
      throw new IllegalArgumentException("'%s' is not a whole number >= 0: %s".formatted(field, value));
    }
    return value.longValue();
  }

  private void checkContiguous() {
    for (int i = 1; i < files.size(); i++) {
      TierEntry before = files.get(i - 1);
      TierEntry after = files.get(i);
      if (after.baseOffset() != before.nextOffset()) {
        throw new IllegalArgumentException(
            "entry at %d does not continue the one before it, which ends at %d"
                .formatted(after.baseOffset(), before.nextOffset()));
      }
    }
  }

  /** The first offset the tier holds, or -1 when it holds nothing. */
  public long startOffset() {
    return files.isEmpty() ? -1 : files.get(0).baseOffset();
  }

  /** The offset after the last one the tier holds, or -1 when it holds nothing. */
  public long endOffset() {
    return files.isEmpty() ? -1 : files.get(files.size() - 1).nextOffset();
  }

  /**
   * The first readable offset of the partition: the tier's start when the tier reaches the
   * SPU's log start (no hole between them), else the SPU's log start.
   *
   * @param logStart the SPU's log start
   * @return the first readable offset
   */
  public long tierStart(long logStart) {
    if (files.isEmpty() || endOffset() < logStart) {
      return logStart;
    }
    return Math.min(startOffset(), logStart);
  }

  /**
   * The entries holding offsets {@code [start, end)}, in order (empty when {@code start >=
   * end}).
   *
   * @param start first offset wanted
   * @param end offset after the last one wanted
   * @return the entries
   * @throws FluvioException {@code OFFSET_OUT_OF_RANGE}: the tier does not hold {@code
   *     start} (tier retention removed it) or ends before {@code end}
   */
  public List<TierEntry> covering(long start, long end) {
    if (start >= end) {
      return List.of();
    }
    long first = startOffset();
    long last = endOffset();
    if (files.isEmpty() || start < first || start >= last) {
      String held = files.isEmpty() ? "nothing" : "[%d, %d)".formatted(first, last);
      throw new FluvioException(
          ErrorCode.OFFSET_OUT_OF_RANGE,
          "partition %d: offset %d is not in the tier, which holds %s".formatted(partition, start, held));
    }
    if (end > last) {
      throw new FluvioException(
          ErrorCode.OFFSET_OUT_OF_RANGE,
          "partition %d: the tier ends at %d, before %d".formatted(partition, last, end));
    }
    return files.stream().filter(e -> e.nextOffset() > start && e.baseOffset() < end).toList();
  }
}

package io.sparkstream.fluvio.datasource;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.Isolation;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.Serializable;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The reader options of {@code format("fluvio")} for batch reads, parsed with the names,
 * rules and messages of {@code datasource/options.py} (an unknown, malformed or
 * contradictory option fails at query start with {@code DataSourceOptionError} naming
 * it).
 *
 * <p>Options this connector does not serve yet (streaming options) are refused with a
 * message that says so; the Python source serves them in a session without the jar.
 *
 * @param endpoint the SC's endpoint
 * @param topics the topics read
 * @param partitions partition indexes to read; null = all
 * @param starting where the read starts
 * @param ending where the read ends
 * @param isolation committed or uncommitted
 * @param includeHeaders add the {@code headers} column
 * @param fetchMaxBytes bytes asked of a leader per fetch
 * @param failOnDataLoss fail when retention removed records the read must return
 * @param minPartitions split ranges until there are at least this many; null = no split
 * @param localReads read a leader's segment files directly when they are on this host
 * @param topicPattern a regex over topic names, matched in full ({@code topicPattern});
 *     {@code topics} is then empty and planning lists the SC's topics; null otherwise
 */
public record ReaderOptions(
    Endpoint endpoint,
    List<String> topics,
    List<Integer> partitions,
    OffsetSpec starting,
    OffsetSpec ending,
    Isolation isolation,
    boolean includeHeaders,
    int fetchMaxBytes,
    boolean failOnDataLoss,
    Integer minPartitions,
    boolean localReads,
    String topicPattern)
    implements Serializable {

  /** Options without a topic pattern. */
  public ReaderOptions(
      Endpoint endpoint, List<String> topics, List<Integer> partitions, OffsetSpec starting,
      OffsetSpec ending, Isolation isolation, boolean includeHeaders, int fetchMaxBytes,
      boolean failOnDataLoss, Integer minPartitions, boolean localReads) {
    this(endpoint, topics, partitions, starting, ending, isolation, includeHeaders, fetchMaxBytes,
        failOnDataLoss, minPartitions, localReads, null);
  }

  /** Every reader option name, as in Python (the unknown-option message lists them). */
  static final List<String> READER =
      List.of(
          "endpoint", "topic", "topics", "topicPattern", "partitions", "startingOffsets",
          "startingTimestamp", "endingOffsets", "endingTimestamp", "isolation",
          "maxRecordsPerTrigger", "maxOffsetsPerTrigger", "maxBytesPerTrigger", "minPartitions",
          "failOnDataLoss", "includeHeaders", "fetchMaxBytes", "localReads", "progressGroup");

  private static final List<String> STREAM_ONLY =
      List.of("maxRecordsPerTrigger", "maxOffsetsPerTrigger", "maxBytesPerTrigger", "progressGroup");
  private static final List<String> BATCH_ONLY = List.of("endingOffsets", "endingTimestamp");
  private static final List<String> SPARK_OWNED = List.of("checkpointlocation");
  private static final String GROUP_PREFIX = "group:";
  private static final int MAX_GROUP_NAME = 249;
  private static final java.util.regex.Pattern NAME_RULE =
      java.util.regex.Pattern.compile("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  private static final int DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024;
  private static final long MAX_MS = 253_402_300_799_999L; // 9999-12-31T23:59:59.999Z

  /**
   * Reject unknown option names (at {@code load()}, before any planning).
   *
   * @param options the options as Spark passes them (any case)
   * @throws FluvioException {@code DATA_SOURCE_OPTION}, naming the first unknown option
   */
  public static void checkNames(Map<String, String> options) {
    canonical(options);
  }

  /**
   * Parse the options of a batch read.
   *
   * @param options the options as Spark passes them (any case)
   * @return the parsed options
   * @throws FluvioException {@code DATA_SOURCE_OPTION}, naming the option at fault
   */
  public static ReaderOptions parseBatch(Map<String, String> options) {
    return parse(options, false);
  }

  /**
   * Parse the options of a batch read or a stream ({@code parse_reader_options} of Python
   * with mode {@code batch} or {@code stream}). For a stream the ending is unused (always
   * {@code latest}) and {@code startingOffsets} defaults to {@code latest}; the per-trigger
   * limits are checked here, in Python's order, and read by {@link StreamOptions}.
   *
   * @param options the options as Spark passes them (any case)
   * @param stream true for a stream
   * @return the parsed options
   * @throws FluvioException {@code DATA_SOURCE_OPTION}, naming the option at fault
   */
  static ReaderOptions parse(Map<String, String> options, boolean stream) {
    Map<String, String> opts = canonical(options);
    for (String name : stream ? BATCH_ONLY : STREAM_ONLY) {
      if (opts.containsKey(name)) {
        throw error("option '%s' only applies to %s reads".formatted(name, stream ? "batch" : "streaming"));
      }
    }
    exclusive(opts, "topic", "topics", "topicPattern");
    exclusive(opts, "maxRecordsPerTrigger", "maxOffsetsPerTrigger");
    List<String> topics;
    String pattern = null;
    if (opts.containsKey("topic")) {
      topics = topicNames(opts.get("topic"), "topic");
      if (topics.size() > 1) {
        throw error("option 'topic' names one topic; use 'topics' for many");
      }
    } else if (opts.containsKey("topics")) {
      topics = topicNames(opts.get("topics"), "topics");
    } else if (opts.containsKey("topicPattern")) {
      topics = List.of();
      pattern = opts.get("topicPattern");
      try {
        java.util.regex.Pattern.compile(pattern);
      } catch (java.util.regex.PatternSyntaxException e) {
        throw error("option 'topicPattern' is not a regex: " + e.getDescription());
      }
    } else {
      throw error("one of the options 'topic', 'topics', 'topicPattern' is required");
    }
    List<Integer> partitions = null;
    if (opts.containsKey("partitions")) {
      partitions = partitionList(opts.get("partitions"));
    }
    OffsetSpec starting =
        offsetsOrTime(opts, "startingOffsets", "startingTimestamp", false,
            stream ? OffsetSpec.LATEST : OffsetSpec.EARLIEST);
    if (!stream && starting.defaultOffset() == OffsetSpec.LATEST && starting.specific().isEmpty()
        && starting.timestampMs() == null) {
      throw error("option 'startingOffsets' cannot be 'latest' for batch reads");
    }
    OffsetSpec ending = stream
        ? new OffsetSpec(OffsetSpec.LATEST, List.of(), null)
        : offsetsOrTime(opts, "endingOffsets", "endingTimestamp", true, OffsetSpec.LATEST);
    for (Map.Entry<String, OffsetSpec> e : Map.of("startingOffsets", starting, "endingOffsets", ending).entrySet()) {
      TreeSet<String> stray = new TreeSet<>();
      for (OffsetSpec.Specific s : e.getValue().specific()) {
        if (!subscribed(s.topic(), topics, pattern)) {
          stray.add(s.topic());
        }
      }
      if (!stray.isEmpty()) {
        throw error("option '%s' names topics the query does not read: %s"
            .formatted(e.getKey(), String.join(", ", stray)));
      }
    }
    Endpoint endpoint = endpoint(opts);
    if (longInteger(opts, "maxRecordsPerTrigger") == null) {
      longInteger(opts, "maxOffsetsPerTrigger");
    }
    // The rest in Python's order, so a case with two faults names the same one.
    Isolation isolation =
        Isolation.valueOf(choice(opts, "isolation", List.of("committed", "uncommitted"), "committed")
            .toUpperCase(Locale.ROOT));
    longInteger(opts, "maxBytesPerTrigger");
    Integer minPartitions = integer(opts, "minPartitions", 1);
    boolean failOnDataLoss = bool(opts, "failOnDataLoss", true);
    boolean includeHeaders = bool(opts, "includeHeaders", false);
    Integer fetchMax = integer(opts, "fetchMaxBytes", 1024);
    boolean localReads = bool(opts, "localReads", true);
    progressGroup(opts); // checked last, as Python does; StreamOptions keeps it
    return new ReaderOptions(
        endpoint, List.copyOf(topics), partitions == null ? null : List.copyOf(partitions),
        starting, ending, isolation, includeHeaders,
        fetchMax == null ? DEFAULT_FETCH_MAX_BYTES : fetchMax, failOnDataLoss, minPartitions,
        localReads, pattern);
  }

  /** True when the read subscribes to {@code topic}: named, or matched by the pattern. */
  static boolean subscribed(String topic, List<String> topics, String pattern) {
    return pattern != null ? java.util.regex.Pattern.matches(pattern, topic) : topics.contains(topic);
  }

  /** True when this read subscribes to {@code topic} ({@code ReaderOptions.matches} of Python). */
  public boolean matches(String topic) {
    return subscribed(topic, topics, topicPattern);
  }

  /**
   * The {@code progressGroup} option of a stream, checked by the group-name rule
   * ({@code _group_name} of {@code datasource/options.py}).
   *
   * @param opts the options by canonical name
   * @return the group's name, stripped, or null when the option is absent
   */
  static String progressGroup(Map<String, String> opts) {
    String raw = opts.get("progressGroup");
    return raw == null ? null : groupName(raw.strip(), "option 'progressGroup'");
  }

  /**
   * A consumer group's name, by the rule the SC applies ({@code check_group_name} of
   * {@code spark_stream/models/group.py}, with its messages).
   */
  static String groupName(String value, String field) {
    if (value.length() > MAX_GROUP_NAME) {
      throw error("%s: %s... is longer than %d characters"
          .formatted(field, pyRepr(value.substring(0, 40)), MAX_GROUP_NAME));
    }
    if (!NAME_RULE.matcher(value).matches()) {
      throw error("%s: %s must be lowercase letters, digits and '-', starting and ending with a letter or digit"
          .formatted(field, pyRepr(value)));
    }
    return value;
  }

  private static Map<String, String> canonical(Map<String, String> options) {
    Map<String, String> byLower = new LinkedHashMap<>();
    READER.forEach(n -> byLower.put(n.toLowerCase(Locale.ROOT), n));
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      String key = e.getKey();
      String name = byLower.get(key.toLowerCase(Locale.ROOT));
      if (name == null) {
        if (SPARK_OWNED.contains(key.toLowerCase(Locale.ROOT))) {
          continue;
        }
        String hint = key.equalsIgnoreCase("path") ? " (name the topic with option('topic', ...))" : "";
        TreeSet<String> known = new TreeSet<>(Comparator.naturalOrder());
        known.addAll(READER);
        throw error("unknown option '%s' for format('fluvio')%s; known options: %s"
            .formatted(key, hint, String.join(", ", known)));
      }
      out.put(name, e.getValue());
    }
    return out;
  }

  private static void exclusive(Map<String, String> opts, String... names) {
    List<String> given = new ArrayList<>();
    for (String n : names) {
      if (opts.containsKey(n)) {
        given.add("'" + n + "'");
      }
    }
    if (given.size() > 1) {
      throw error("options %s contradict each other: give one".formatted(String.join(" and ", given)));
    }
  }

  private static List<String> topicNames(String raw, String name) {
    LinkedHashSet<String> topics = new LinkedHashSet<>();
    for (String t : raw.split(",", -1)) {
      if (t.strip().isEmpty()) {
        throw error("option '%s' has an empty topic name: %s".formatted(name, pyRepr(raw)));
      }
      topics.add(t.strip());
    }
    return new ArrayList<>(topics);
  }

  private static List<Integer> partitionList(String raw) {
    TreeSet<Integer> parts = new TreeSet<>();
    try {
      for (String p : raw.split(",", -1)) {
        parts.add(Integer.parseInt(p.strip()));
      }
    } catch (NumberFormatException e) {
      parts.add(-1);
    }
    if (parts.isEmpty() || parts.first() < 0) {
      throw error("option 'partitions' must be a comma list of partition numbers, got %s"
          .formatted(pyRepr(raw)));
    }
    return new ArrayList<>(parts);
  }

  private static OffsetSpec offsetsOrTime(
      Map<String, String> opts, String offsetsName, String timeName, boolean ending, long dflt) {
    exclusive(opts, offsetsName, timeName);
    if (opts.containsKey(timeName)) {
      return new OffsetSpec(dflt, List.of(), timestampMs(opts.get(timeName), timeName));
    }
    if (opts.containsKey(offsetsName)) {
      return offsetSpec(opts.get(offsetsName), offsetsName, ending);
    }
    return new OffsetSpec(dflt, List.of(), null);
  }

  /** {@code parse_offset_spec} of Python. */
  static OffsetSpec offsetSpec(String raw, String name, boolean ending) {
    String text = raw.strip();
    String lowered = text.toLowerCase(Locale.ROOT);
    if (lowered.startsWith(GROUP_PREFIX)) {
      if (ending) {
        throw error("option '%s' cannot be a group's offsets".formatted(name));
      }
      String group = groupName(text.substring(GROUP_PREFIX.length()).strip(), "option '%s'".formatted(name));
      return new OffsetSpec(OffsetSpec.EARLIEST, List.of(), null, group);
    }
    if (lowered.equals("earliest")) {
      if (ending) {
        throw error("option '%s' cannot be 'earliest'".formatted(name));
      }
      return new OffsetSpec(OffsetSpec.EARLIEST, List.of(), null);
    }
    if (lowered.equals("latest")) {
      return new OffsetSpec(OffsetSpec.LATEST, List.of(), null);
    }
    JsonNode parsed;
    try {
      parsed = new ObjectMapper().readTree(text);
    } catch (Exception e) {
      parsed = null;
    }
    if (parsed == null || parsed.isMissingNode()) {
      String forms = ending ? "latest" : "earliest, latest, group:NAME";
      throw error("option '%s' must be %s or JSON like {\"topic\": {\"0\": 23}}, got %s"
          .formatted(name, forms, pyRepr(raw)));
    }
    if (!parsed.isObject() || parsed.isEmpty()) {
      throw error("option '%s' JSON must be a non-empty object".formatted(name));
    }
    TreeMap<String, OffsetSpec.Specific> specific = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = parsed.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> topic = it.next();
      if (!topic.getValue().isObject()) {
        throw error("option '%s': topic %s must map partition numbers to offsets"
            .formatted(name, pyRepr(topic.getKey())));
      }
      for (Iterator<Map.Entry<String, JsonNode>> ps = topic.getValue().properties().iterator(); ps.hasNext(); ) {
        Map.Entry<String, JsonNode> part = ps.next();
        int index;
        try {
          index = Integer.parseInt(part.getKey().strip());
        } catch (NumberFormatException e) {
          index = -1;
        }
        JsonNode offset = part.getValue();
        if (index < 0 || !offset.isIntegralNumber()) {
          throw error("option '%s': %s/%s -> %s is not a partition number mapped to an integer offset"
              .formatted(name, topic.getKey(), part.getKey(), pyRepr(offset)));
        }
        long value = offset.longValue();
        if (value < OffsetSpec.EARLIEST || (ending && value == OffsetSpec.EARLIEST)) {
          throw error("option '%s': offset %d for %s/%d is invalid".formatted(name, value, topic.getKey(), index));
        }
        specific.put(topic.getKey() + "\0" + String.format("%010d", index),
            new OffsetSpec.Specific(topic.getKey(), index, value));
      }
    }
    return new OffsetSpec(ending ? OffsetSpec.LATEST : OffsetSpec.EARLIEST,
        List.copyOf(specific.values()), null);
  }

  /**
   * A time option in milliseconds, checked as {@code to_timestamp_us(ms, "ms", ...)} of
   * {@code spark_stream/client/timestamps.py} checks it: a value past the year 9999 was
   * written in a finer unit and would read nothing, so it is refused naming that unit.
   */
  private static long timestampMs(String raw, String name) {
    BigInteger ms;
    try {
      ms = new BigInteger(raw.strip());
    } catch (NumberFormatException e) {
      throw error("option '%s' must be an integer (milliseconds since the epoch), got %s"
          .formatted(name, pyRepr(raw)));
    }
    String what = "option '" + name + "'";
    if (ms.signum() < 0) {
      throw error("%s is milliseconds since the epoch and must be >= 0, got %s".formatted(what, ms));
    }
    BigInteger limit = BigInteger.valueOf(MAX_MS);
    if (ms.compareTo(limit) <= 0) {
      return ms.longValueExact();
    }
    String[][] finer = {{"microseconds", "1000"}, {"nanoseconds", "1000000"}};
    for (String[] unit : finer) {
      BigInteger converted = ms.divide(new BigInteger(unit[1]));
      if (converted.compareTo(limit) <= 0) {
        throw error(("%s is milliseconds since the epoch, and %s ms is after the year 9999: it "
                + "looks like %s; in milliseconds that is %s (%s)")
            .formatted(what, ms, unit[0], converted, iso(converted.longValueExact())));
      }
    }
    throw error("%s is milliseconds since the epoch, and %s ms is after the year 9999".formatted(what, ms));
  }

  /** Python's {@code datetime.isoformat()} of a UTC time in ms, with {@code Z}. */
  private static String iso(long ms) {
    java.time.LocalDateTime t =
        java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000), Math.floorMod(ms, 1000) * 1_000_000,
            java.time.ZoneOffset.UTC);
    String base = t.format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss"));
    return (ms % 1000 == 0 ? base : base + ".%06d".formatted(Math.floorMod(ms, 1000) * 1000)) + "Z";
  }

  static Endpoint endpoint(Map<String, String> opts) {
    String raw = opts.get("endpoint");
    if (raw == null) {
      raw = System.getenv("FLUVIO_ENDPOINT");
      if (raw == null || raw.isBlank()) {
        return ClientProfile.endpoint();
      }
      return wrap(() -> Endpoint.parse(System.getenv("FLUVIO_ENDPOINT"), "FLUVIO_ENDPOINT"));
    }
    String given = raw;
    return wrap(() -> Endpoint.parse(given, "option 'endpoint'"));
  }

  private static Endpoint wrap(java.util.function.Supplier<Endpoint> parse) {
    try {
      return parse.get();
    } catch (FluvioException e) {
      throw error(e.getMessage());
    }
  }

  static Integer integer(Map<String, String> opts, String name, int minimum) {
    String raw = opts.get(name);
    if (raw == null) {
      return null;
    }
    int value;
    try {
      value = Integer.parseInt(raw.strip());
    } catch (NumberFormatException e) {
      throw error("option '%s' must be an integer, got %s".formatted(name, pyRepr(raw)));
    }
    if (value < minimum) {
      throw error("option '%s' must be >= %d, got %d".formatted(name, minimum, value));
    }
    return value;
  }

  /**
   * A per-trigger limit ({@code _int(opts, name, 1)} of Python, which has no upper bound:
   * here up to {@code Long.MAX_VALUE}, past which a limit means nothing anyway).
   */
  static Long longInteger(Map<String, String> opts, String name) {
    String raw = opts.get(name);
    if (raw == null) {
      return null;
    }
    BigInteger value;
    try {
      value = new BigInteger(raw.strip());
    } catch (NumberFormatException e) {
      throw error("option '%s' must be an integer, got %s".formatted(name, pyRepr(raw)));
    }
    if (value.signum() < 1) {
      throw error("option '%s' must be >= 1, got %s".formatted(name, value));
    }
    return value.bitLength() < 64 ? value.longValue() : Long.MAX_VALUE;
  }

  /** The options as canonically spelled names (as {@link #checkNames} checks them). */
  /**
   * The topics a read or write names ({@code topic}/{@code topics}), empty with a pattern
   * or none: {@code named_topics} of {@code datasource/options.py}.
   *
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: an empty topic name
   */
  static List<String> namedTopics(Map<String, String> options) {
    Map<String, String> opts = canonical(options);
    for (String name : List.of("topic", "topics")) {
      if (opts.containsKey(name)) {
        return topicNames(opts.get(name), name);
      }
    }
    return List.of();
  }

  static Map<String, String> canonicalNames(Map<String, String> options) {
    return canonical(options);
  }

  static boolean bool(Map<String, String> opts, String name, boolean dflt) {
    String raw = opts.get(name);
    if (raw == null) {
      return dflt;
    }
    String lowered = raw.strip().toLowerCase(Locale.ROOT);
    if (!lowered.equals("true") && !lowered.equals("false")) {
      throw error("option '%s' must be true or false, got %s".formatted(name, pyRepr(raw)));
    }
    return lowered.equals("true");
  }

  static String choice(Map<String, String> opts, String name, List<String> choices, String dflt) {
    String raw = opts.getOrDefault(name, dflt).strip().toLowerCase(Locale.ROOT);
    if (choices.contains(raw)) {
      return raw;
    }
    throw error("option '%s' must be one of %s, got %s"
        .formatted(name, String.join(", ", choices), pyRepr(opts.get(name))));
  }

  /** Python's {@code repr} of a JSON value as {@code json.loads} gives it. */
  static String pyRepr(JsonNode v) {
    if (v.isTextual()) {
      return pyRepr(v.textValue());
    }
    if (v.isBoolean()) {
      return v.booleanValue() ? "True" : "False";
    }
    if (v.isNull()) {
      return "None";
    }
    return v.toString();
  }

  /** Python's {@code repr} of a str (single quotes unless the text holds one). */
  static String pyRepr(String s) {
    if (s == null) {
      return "None";
    }
    boolean single = s.contains("'");
    boolean dbl = s.contains("\"");
    char q = single && !dbl ? '"' : '\'';
    StringBuilder out = new StringBuilder().append(q);
    for (char c : s.toCharArray()) {
      if (c == q || c == '\\') {
        out.append('\\').append(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c == '\r') {
        out.append("\\r");
      } else {
        out.append(c);
      }
    }
    return out.append(q).toString();
  }

  static FluvioException error(String message) {
    return new FluvioException(ErrorCode.DATA_SOURCE_OPTION, message);
  }
}

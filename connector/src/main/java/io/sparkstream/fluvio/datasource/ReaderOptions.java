package io.sparkstream.fluvio.datasource;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.TlsSettings;
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
 * @param assign Kafka's {@code assign}: the only partitions read of each topic ({@code
 *     topics} then holds the same topics); null otherwise
 * @param token the client token ({@code token} option, else {@code FLUVIO_TOKEN}, else the
 *     profile's for this endpoint), resolved on the driver; null: none
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
    String topicPattern,
    List<KafkaOptionValues.Assigned> assign,
    String token)
    implements Serializable {

  /** Options without a topic pattern. */
  public ReaderOptions(
      Endpoint endpoint, List<String> topics, List<Integer> partitions, OffsetSpec starting,
      OffsetSpec ending, Isolation isolation, boolean includeHeaders, int fetchMaxBytes,
      boolean failOnDataLoss, Integer minPartitions, boolean localReads) {
    this(endpoint, topics, partitions, starting, ending, isolation, includeHeaders, fetchMaxBytes,
        failOnDataLoss, minPartitions, localReads, null, null, null);
  }

  /**
   * The partitions read of {@code topic}: {@code assign}'s, else {@code partitions}.
   *
   * @param topic a topic the read subscribes to
   * @return the partition indexes; null = all
   */
  public List<Integer> partitionsOf(String topic) {
    if (assign != null) {
      return assign.stream().filter(a -> a.topic().equals(topic)).findFirst()
          .map(KafkaOptionValues.Assigned::partitions).orElse(List.of());
    }
    return partitions;
  }

  /** The option that selects partitions ({@code assign} or {@code partitions}), for messages. */
  public String partitionsOption() {
    return assign != null ? "assign" : "partitions";
  }

  /** Every reader option name, as in Python (the unknown-option message lists them). */
  static final List<String> READER =
      List.of(
          "endpoint", "token", "topic", "topics", "topicPattern", "partitions", "startingOffsets",
          "startingTimestamp", "endingOffsets", "endingTimestamp", "isolation",
          "maxRecordsPerTrigger", "maxOffsetsPerTrigger", "maxBytesPerTrigger", "minPartitions",
          "failOnDataLoss", "includeHeaders", "fetchMaxBytes", "localReads", "skipCorruptFrames",
          "progressGroup",
          "assign", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
          "endingOffsetsByTimestamp", "minOffsetsPerTrigger", "maxTriggerDelay", "tls.ca",
          "tls.cert", "tls.key");

  private static final List<String> STREAM_ONLY =
      List.of("maxRecordsPerTrigger", "maxOffsetsPerTrigger", "maxBytesPerTrigger", "progressGroup",
          "minOffsetsPerTrigger", "maxTriggerDelay");
  private static final List<String> BATCH_ONLY =
      List.of("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp");
  /** {@code maxTriggerDelay} when not set: 15 minutes, as Spark's Kafka source. */
  static final long DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000L;
  private static final String GROUP_PREFIX = "group:";
  private static final int MAX_GROUP_NAME = 249;
  private static final java.util.regex.Pattern NAME_RULE =
      java.util.regex.Pattern.compile("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  private static final int DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024;

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
    OptionNames.Given given = OptionNames.canonical(options, READER, OptionNames.READER_ALIASES);
    Map<String, String> opts = given.values();
    for (String name : stream ? BATCH_ONLY : STREAM_ONLY) {
      if (opts.containsKey(name)) {
        throw error("option '%s' only applies to %s reads".formatted(name, stream ? "batch" : "streaming"));
      }
    }
    exclusive(given, "topic", "topics", "topicPattern", "assign");
    exclusive(given, "maxRecordsPerTrigger", "maxOffsetsPerTrigger");
    exclusive(given, "assign", "partitions");
    List<String> topics;
    String pattern = null;
    List<KafkaOptionValues.Assigned> assign = null;
    if (opts.containsKey("topic")) {
      topics = topicNames(opts.get("topic"), "topic");
      if (topics.size() > 1) {
        throw error("option 'topic' names one topic; use 'topics' for many");
      }
    } else if (opts.containsKey("topics")) {
      topics = topicNames(opts.get("topics"), given.name("topics"));
    } else if (opts.containsKey("topicPattern")) {
      topics = List.of();
      pattern = opts.get("topicPattern");
      try {
        java.util.regex.Pattern.compile(pattern);
      } catch (java.util.regex.PatternSyntaxException e) {
        throw error("option '%s' is not a regex: %s".formatted(given.name("topicPattern"), e.getDescription()));
      }
    } else if (opts.containsKey("assign")) {
      assign = KafkaOptionValues.assign(opts.get("assign"), "assign");
      topics = assign.stream().map(KafkaOptionValues.Assigned::topic).toList();
    } else {
      throw error("one of the options 'topic', 'topics' ('subscribe'), 'topicPattern' "
          + "('subscribePattern'), 'assign' is required");
    }
    List<Integer> partitions = null;
    if (opts.containsKey("partitions")) {
      partitions = partitionList(opts.get("partitions"));
    }
    String strategy = timeStrategy(opts);
    String[] startNames = {"startingOffsets", "startingTimestamp", "startingOffsetsByTimestamp"};
    OffsetSpec starting =
        offsetsOrTime(given, startNames, false, stream ? OffsetSpec.LATEST : OffsetSpec.EARLIEST, strategy);
    if (!stream && starting.defaultOffset() == OffsetSpec.LATEST && starting.specific().isEmpty()
        && starting.timestampMs() == null && starting.timestamps().isEmpty()) {
      throw error("option 'startingOffsets' cannot be 'latest' for batch reads");
    }
    String[] endNames = {"endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"};
    OffsetSpec ending = stream
        ? new OffsetSpec(OffsetSpec.LATEST, List.of(), null)
        : offsetsOrTime(given, endNames, true, OffsetSpec.LATEST, "latest");
    List<Map.Entry<String, OffsetSpec>> checked = new ArrayList<>();
    checked.add(Map.entry(given(opts, startNames), starting));
    if (!stream) {
      checked.add(Map.entry(given(opts, endNames), ending));
    }
    for (Map.Entry<String, OffsetSpec> e : checked) {
      TreeSet<String> stray = new TreeSet<>();
      for (String topic : e.getValue().topics()) {
        if (!subscribed(topic, topics, pattern)) {
          stray.add(topic);
        }
      }
      if (!stray.isEmpty()) {
        throw error("option '%s' names topics the query does not read: %s"
            .formatted(e.getKey(), String.join(", ", stray)));
      }
    }
    Endpoint endpoint = endpoint(given);
    if (longInteger(opts, "maxRecordsPerTrigger") == null) {
      longInteger(opts, "maxOffsetsPerTrigger");
    }
    triggerWait(opts);
    // The rest in Python's order, so a case with two faults names the same one.
    Isolation isolation = isolation(given);
    longInteger(opts, "maxBytesPerTrigger");
    Integer minPartitions = integer(opts, "minPartitions", 1);
    boolean failOnDataLoss = bool(opts, "failOnDataLoss", true);
    boolean includeHeaders = bool(opts, "includeHeaders", false);
    Integer fetchMax = integer(opts, "fetchMaxBytes", 1024);
    boolean localReads = bool(opts, "localReads", true);
    if (bool(opts, "skipCorruptFrames", false)) {
      // The Python source skips damaged frames; this reader has no skip path yet.
      throw error(
          "option 'skipCorruptFrames' is not supported by the JVM connector: damaged frames "
              + "fail the task naming their offsets; read with the Python source to skip them");
    }
    progressGroup(opts); // checked last, as Python does; StreamOptions keeps it
    return new ReaderOptions(
        endpoint, List.copyOf(topics), partitions == null ? null : List.copyOf(partitions),
        starting, ending, isolation, includeHeaders,
        fetchMax == null ? DEFAULT_FETCH_MAX_BYTES : fetchMax, failOnDataLoss, minPartitions,
        localReads, pattern, assign, token(given, endpoint));
  }

  /** The first of {@code names} given, else the first ({@code _offsets_or_time}'s name). */
  private static String given(Map<String, String> opts, String[] names) {
    for (String n : names) {
      if (opts.containsKey(n)) {
        return n;
      }
    }
    return names[0];
  }

  /**
   * {@code startingOffsetsByTimestampStrategy}: Kafka's default {@code error} with the
   * per-partition form, {@code latest} with {@code startingTimestamp}; refused without either.
   */
  private static String timeStrategy(Map<String, String> opts) {
    String name = "startingOffsetsByTimestampStrategy";
    if (!opts.containsKey(name)) {
      return opts.containsKey("startingOffsetsByTimestamp") ? "error" : "latest";
    }
    if (!opts.containsKey("startingTimestamp") && !opts.containsKey("startingOffsetsByTimestamp")) {
      throw error("option '%s' only applies with 'startingOffsetsByTimestamp' or 'startingTimestamp'"
          .formatted(name));
    }
    return choice(opts, name, List.of("error", "latest"), "error");
  }

  /**
   * {@code minOffsetsPerTrigger} and {@code maxTriggerDelay} (ms), as {@code _trigger_wait}
   * of Python: the delay needs the minimum.
   *
   * @param opts the options by canonical name
   * @return {minimum or null, delay ms}
   */
  static Long[] triggerWait(Map<String, String> opts) {
    Long minimum = longInteger(opts, "minOffsetsPerTrigger");
    long delay = DEFAULT_MAX_TRIGGER_DELAY_MS;
    if (opts.containsKey("maxTriggerDelay")) {
      if (minimum == null) {
        throw error("option 'maxTriggerDelay' only applies with 'minOffsetsPerTrigger'");
      }
      delay = KafkaOptionValues.durationMs(opts.get("maxTriggerDelay"), "maxTriggerDelay");
    }
    return new Long[] {minimum, delay};
  }

  /** {@code isolation} ({@code kafka.isolation.level}) in the words of {@link Isolation#WORDS}. */
  private static Isolation isolation(OptionNames.Given given) {
    String raw = given.values().get("isolation");
    if (raw == null) {
      return Isolation.COMMITTED;
    }
    Isolation found = Isolation.parse(raw);
    if (found == null) {
      throw error("option '%s' must be one of %s, got %s".formatted(
          given.name("isolation"), String.join(", ", Isolation.WORDS.keySet()), pyRepr(raw)));
    }
    return found;
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
   * ({@code group_option} of {@code datasource/offset_spec.py}).
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
    return OptionNames.canonical(options, READER, OptionNames.READER_ALIASES).values();
  }

  private static void exclusive(OptionNames.Given opts, String... names) {
    List<String> given = new ArrayList<>();
    for (String n : names) {
      if (opts.values().containsKey(n)) {
        given.add("'" + opts.name(n) + "'");
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
      OptionNames.Given given, String[] names, boolean ending, long dflt, String strategy) {
    exclusive(given, names);
    Map<String, String> opts = given.values();
    if (opts.containsKey(names[1])) {
      long ms = KafkaOptionValues.timestampMs(opts.get(names[1]), names[1]);
      return new OffsetSpec(dflt, List.of(), ms, null, List.of(), strategy);
    }
    if (opts.containsKey(names[2])) {
      List<OffsetSpec.Specific> times = KafkaOptionValues.timestamps(opts.get(names[2]), names[2]);
      return new OffsetSpec(dflt, List.of(), null, null, times, strategy);
    }
    if (opts.containsKey(names[0])) {
      return offsetSpec(opts.get(names[0]), names[0], ending);
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
        int index = partitionIndex(part.getKey());
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
   * The {@code endpoint} option ({@code kafka.bootstrap.servers}), else {@code
   * FLUVIO_ENDPOINT}, else the profile. Each may list several SC addresses (standby SCs;
   * Kafka's form lists several servers), comma-separated: each is checked, the first is
   * tried first and the rest in turn when it does not answer ({@code ScEndpoints}).
   */
  static Endpoint endpoint(OptionNames.Given given) {
    Endpoint address = address(given);
    return address.withTls(tls(given, address));
  }

  /** The endpoint's address, as the options, the environment or the profile give it. */
  private static Endpoint address(OptionNames.Given given) {
    String raw = given.values().get("endpoint");
    if (raw == null) {
      raw = System.getenv("FLUVIO_ENDPOINT");
      if (raw == null || raw.isBlank()) {
        return ClientProfile.endpoint();
      }
      return wrap(() -> Endpoint.list(System.getenv("FLUVIO_ENDPOINT"), "FLUVIO_ENDPOINT"));
    }
    String what = "option '%s'".formatted(given.name("endpoint"));
    for (String host : raw.split(",", -1)) {
      wrap(() -> Endpoint.parse(host.strip(), what));  // each checked, as Python's _endpoint
    }
    String listed = raw;
    return wrap(() -> Endpoint.list(listed, what));
  }

  /**
   * The {@code tls.*} options, else the profile's TLS when the profile names {@code
   * address} ({@code resolve_tls} in Python), else null (plaintext). The files are loaded
   * here, on the driver, so a missing one fails the query at its start.
   */
  private static TlsSettings tls(OptionNames.Given given, Endpoint address) {
    Map<String, String> opts = given.values();
    TlsSettings settings;
    try {
      settings = TlsSettings.of(opts.get("tls.ca"), opts.get("tls.cert"), opts.get("tls.key"));
      if (settings != null) {
        settings.context();
      }
    } catch (FluvioException e) {
      throw error("options tls.*: " + e.getMessage());
    }
    return settings != null ? settings : ClientProfile.tlsFor(address);
  }

  /**
   * The client token: the {@code token} option, else {@code FLUVIO_TOKEN}, else the
   * current profile's when its endpoint is {@code endpoint}; null for none.
   */
  static String token(OptionNames.Given given, Endpoint endpoint) {
    String raw = given.values().get("token");
    if (raw != null && !raw.isBlank()) {
      return raw.strip();
    }
    return ClientProfile.token(endpoint);
  }

  /** The token a read names, as {@link #token(OptionNames.Given, Endpoint)}. */
  static String namedToken(Map<String, String> options, Endpoint endpoint) {
    return token(OptionNames.canonical(options, READER, OptionNames.READER_ALIASES), endpoint);
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

  /**
   * The topics a read names ({@code topic}/{@code topics}/{@code assign}, and Kafka's
   * aliases), empty with a pattern or none: {@code named_topics} of {@code
   * datasource/options.py}.
   *
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: an unknown option, an empty topic
   *     name, a bad {@code assign}
   */
  static List<String> namedTopics(Map<String, String> options) {
    OptionNames.Given given = OptionNames.canonical(options, READER, OptionNames.READER_ALIASES);
    Map<String, String> opts = given.values();
    if (opts.containsKey("topicPattern")) {
      return List.of();
    }
    if (opts.containsKey("topic")) {
      List<String> topics = topicNames(opts.get("topic"), "topic");
      if (topics.size() > 1) {
        throw error("option 'topic' names one topic; use 'topics' for many");
      }
      return topics;
    }
    if (opts.containsKey("topics")) {
      return topicNames(opts.get("topics"), given.name("topics"));
    }
    if (opts.containsKey("assign")) {
      return KafkaOptionValues.assign(opts.get("assign"), "assign").stream()
          .map(KafkaOptionValues.Assigned::topic).toList();
    }
    return List.of();
  }

  /**
   * The endpoint a read names ({@code endpoint}, {@code kafka.bootstrap.servers}), else
   * {@code FLUVIO_ENDPOINT}, else the profile: {@code named_endpoint} of {@code
   * datasource/options.py}.
   */
  static Endpoint namedEndpoint(Map<String, String> options) {
    return endpoint(OptionNames.canonical(options, READER, OptionNames.READER_ALIASES));
  }

  /** The options as canonically spelled names (as {@link #checkNames} checks them). */
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

  /**
   * A JSON key naming a partition ({@code " 2"} as Python's {@code int()} reads it), or -1
   * when it is not an integer; callers refuse a negative index with their own message.
   */
  static int partitionIndex(String key) {
    try {
      return Integer.parseInt(key.strip());
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}

package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.protocol.Frame;
import io.sparkstream.fluvio.records.TopicSchema;
import java.io.Closeable;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * Requests to partition leaders with failover ({@code spark_stream/client/leader.py}): it
 * looks the leader up in the SC's metadata, sends the request, and on a retriable error
 * ({@code NotLeaderError}, a lost connection, an unknown leader epoch...) drops the cached
 * metadata and closed connections, backs off (doubling, up to 2 s) and tries again until
 * the client's timeout has passed since the first attempt; an election after a leader
 * died takes the SC a few seconds, which this rides out. A leader that hangs (its socket
 * open, no reply) is left as soon as the SC replaces it: every leader request (fetch,
 * local fetch, offsets, produce) asks the SC while it waits ({@link #leaderRequest}), and
 * so does an idle fetch stream ({@link #stream}).
 *
 * <p>Not serializable: a Spark task builds one on the executor and closes it.
 */
public final class LeaderClient implements Closeable {
  private static final long FIRST_BACKOFF_MS = 50;
  private static final long MAX_BACKOFF_MS = 2_000;
  /** How often a request in flight to a leader asks the SC whether it was replaced. */
  static final int WATCH_MS = 1_000;

  /** The SC addresses and the current one ({@link #withSc}). */
  private final ScEndpoints scEndpoints;
  private final int timeoutMs;
  private final String token;
  private final Map<Endpoint, Connection> connections = new HashMap<>();
  private final Map<String, Metadata> metadata = new HashMap<>();

  /**
   * A client of the cluster whose SC is at {@code scEndpoint}.
   *
   * @param scEndpoint the SC's public endpoint
   * @param timeoutMs bound on connecting and on each request
   */
  public LeaderClient(Endpoint scEndpoint, int timeoutMs) {
    this(scEndpoint, timeoutMs, null);
  }

  /**
   * A client of the cluster whose SC is at {@code scEndpoint} that presents {@code token}
   * on every connection it opens (to the SC and to each leader).
   *
   * @param scEndpoint the SC's public endpoint (with the standby SCs' as its others)
   * @param timeoutMs bound on connecting and on each request
   * @param token the client token of a cluster with auth on; null: none
   */
  public LeaderClient(Endpoint scEndpoint, int timeoutMs, String token) {
    this.scEndpoints = new ScEndpoints(scEndpoint);
    this.timeoutMs = timeoutMs;
    this.token = token;
  }

  /**
   * The topic's metadata, from the cache or the SC.
   *
   * @param topic the topic
   * @return the snapshot
   */
  public Metadata metadata(String topic) {
    Metadata cached = metadata.get(topic);
    if (cached == null) {
      cached = withSc(sc -> Metadata.load(sc, topic));
      metadata.put(topic, cached);
    }
    return cached;
  }

  /**
   * Run {@code call} on a connection to the SC: each listed SC address in turn until one
   * answers, following a standby's {@code NOT_ACTIVE} to the active SC ({@link ScEndpoints});
   * the address that answered stays current for the next call.
   */
  private <T> T withSc(Function<Connection, T> call) {
    return scEndpoints.call(endpoint -> call.apply(connection(endpoint, null)));
  }

  private Frame scRequest(int api, int version, Map<String, ?> meta) {
    return withSc(sc -> sc.request(api, version, meta));
  }

  /**
   * The topic's {@code compression} setting ({@code any}, {@code none}, {@code lz4} or
   * {@code zstd}), asked of the SC: a producer with no codec of its own adopts it.
   *
   * @param topic the topic
   * @return the setting, {@code any} when the SC names none
   */
  public String topicCompression(String topic) {
    Map<String, Object> described =
        scRequest(ApiKeys.DESCRIBE_TOPIC, 0, Map.of("name", topic)).decodeMeta();
    Object spec = described.get("topic");
    Object setting = spec instanceof Map<?, ?> m ? m.get("compression") : null;
    return setting == null ? "any" : setting.toString();
  }

  /**
   * A partition's log start, LEO and HW, and optionally the first offset at a time.
   *
   * @param topic the topic
   * @param partition the partition
   * @param timestampUs a time in microseconds since the epoch, or null
   * @return the offsets; {@code offset} is -1 when no time was asked or no record is as new
   */
  public PartitionOffsets fetchOffsets(String topic, int partition, Long timestampUs) {
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("topic", topic);
    meta.put("partition", partition);
    meta.put("timestamp_us", timestampUs);
    Frame reply = leaderRequest(topic, partition, ApiKeys.FETCH_OFFSETS, meta, null, null);
    Map<String, Object> m = reply.decodeMeta();
    Object offset = m.get("offset");
    return new PartitionOffsets(
        num(m, "log_start"), num(m, "leo"), num(m, "hw"), offset == null ? -1 : ((Number) offset).longValue());
  }

  /**
   * Read batch frames from the frame holding {@code offset} on.
   *
   * @param topic the topic
   * @param partition the partition
   * @param offset the first offset wanted
   * @param maxBytes soft limit on the reply's frames (at least one is returned)
   * @param isolation committed or uncommitted
   * @return the offsets at read time and the frames
   */
  public FetchResult fetch(String topic, int partition, long offset, int maxBytes, Isolation isolation) {
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("topic", topic);
    meta.put("partition", partition);
    meta.put("offset", offset);
    meta.put("max_bytes", maxBytes);
    meta.put("isolation", isolation.wireName());
    meta.put("max_wait_ms", 0);
    Frame reply = leaderRequest(topic, partition, ApiKeys.FETCH, meta, null, null);
    Map<String, Object> m = reply.decodeMeta();
    PartitionOffsets offsets = new PartitionOffsets(num(m, "log_start"), num(m, "leo"), num(m, "hw"), -1);
    return new FetchResult(offsets, reply.tail());
  }

  /**
   * Ask the leader where the frames from {@code offset} on lie in its segment file.
   *
   * @param topic the topic
   * @param partition the partition
   * @param offset the first offset wanted
   * @param maxBytes soft limit on the range named
   * @param isolation committed or uncommitted
   * @return the reply
   * @throws FluvioException {@code UNSUPPORTED_VERSION} from a leader that predates local
   *     fetches (the caller then fetches over the network), and as {@link #fetch}
   */
  public LocalFetch fetchLocal(String topic, int partition, long offset, int maxBytes, Isolation isolation) {
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("topic", topic);
    meta.put("partition", partition);
    meta.put("offset", offset);
    meta.put("max_bytes", maxBytes);
    meta.put("isolation", isolation.wireName());
    meta.put("max_wait_ms", 0);
    Map<String, Object> m =
        leaderRequest(topic, partition, ApiKeys.FETCH_LOCAL, meta, null, null).decodeMeta();
    PartitionOffsets offsets = new PartitionOffsets(num(m, "log_start"), num(m, "leo"), num(m, "hw"), -1);
    Object path = m.get("path");
    return new LocalFetch(
        offsets, path == null ? "" : path.toString(), num(m, "base_offset"), num(m, "position"),
        num(m, "length"), num(m, "device"), num(m, "inode"));
  }

  /**
   * Open a {@code STREAM_FETCH} stream of a partition from {@code offset} on, to its leader
   * in fresh metadata (a stream is opened at the start and after a failure, when the cache
   * may be stale). While no push comes the stream asks the SC every {@link #WATCH_MS}
   * whether that leader was replaced and then ends with {@code NOT_LEADER}, so the caller
   * reopens at its next offset on the new leader ({@link FetchStream}).
   *
   * @param topic the topic
   * @param partition the partition
   * @param offset the first offset wanted
   * @param maxBytes soft limit on the frames of one push
   * @param isolation committed or uncommitted
   * @return the open stream (the caller closes it)
   * @throws FluvioException as {@link #metadata} and {@link FetchStream#open}
   */
  public FetchStream stream(String topic, int partition, long offset, int maxBytes, Isolation isolation) {
    Metadata fresh = withSc(sc -> Metadata.load(sc, topic));
    metadata.put(topic, fresh);
    int spuId = fresh.leaderId(partition);
    return FetchStream.open(
        fresh.leader(partition), topic, partition, offset, maxBytes, isolation, timeoutMs, token,
        () -> leaderReplaced(topic, partition, spuId), WATCH_MS);
  }

  /**
   * Append one batch frame to a partition on its leader ({@code PRODUCE}), retrying as
   * every request does; {@code OutOfOrderSequenceError} is retried too when asked (an
   * idempotent producer's earlier frame may still be settling on a new leader), as the
   * Python sender does. While the request waits, the metadata is asked again every {@link
   * #WATCH_MS}: once it names another leader, or marks the leader offline (a hung SPU the
   * SC replaced), the request is abandoned and retried on the new leader at once, as
   * {@code _attempt} of {@code spark_stream/client/leader.py} does; an idempotent
   * producer's sequence numbers dedupe a frame the old leader appended after all.
   *
   * @param topic the topic
   * @param partition the partition
   * @param acks 0 none, 1 leader, -1 all
   * @param frame one batch frame
   * @param retryOutOfOrder retry {@code OutOfOrderSequenceError} within the timeout
   * @return the reply's {@code base_offset}, {@code leo} and {@code hw}
   */
  public Map<String, Object> produce(
      String topic, int partition, int acks, byte[] frame, boolean retryOutOfOrder) {
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("topic", topic);
    meta.put("partition", partition);
    meta.put("acks", acks);
    meta.put("timeout_ms", timeoutMs);
    return leaderRequest(
            topic, partition, ApiKeys.PRODUCE, meta, frame,
            retryOutOfOrder ? ErrorCode.OUT_OF_ORDER_SEQUENCE : null)
        .decodeMeta();
  }

  /**
   * A consumer group's committed offsets ({@code OFFSET_FETCH} on the SC), for the
   * partitions named.
   *
   * @param group the group
   * @param partitions {@code topic/partition} keys of the partitions wanted
   * @return committed offset by {@code topic/partition}; partitions without one are absent
   * @throws FluvioException {@code UNKNOWN_GROUP} when the group does not exist
   */
  public Map<String, Long> committedOffsets(String group, java.util.Collection<String> partitions) {
    scRequest(ApiKeys.DESCRIBE_GROUP, 0, Map.of("group", group));
    java.util.List<Map<String, Object>> wanted = new java.util.ArrayList<>();
    for (String tp : partitions) {
      int slash = tp.lastIndexOf('/');
      Map<String, Object> entry = new LinkedHashMap<>();
      entry.put("topic", tp.substring(0, slash));
      entry.put("partition", Integer.parseInt(tp.substring(slash + 1)));
      wanted.add(entry);
    }
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("group", group);
    meta.put("partitions", wanted);
    Object offsets = scRequest(ApiKeys.OFFSET_FETCH, 0, meta).decodeMeta().get("offsets");
    Map<String, Long> out = new LinkedHashMap<>();
    if (offsets instanceof java.util.List<?> list) {
      for (Object o : list) {
        if (o instanceof Map<?, ?> m && m.get("offset") instanceof Number n) {
          out.put(m.get("topic") + "/" + m.get("partition"), n.longValue());
        }
      }
    }
    return out;
  }

  /**
   * Write an outside reader's progress (a Spark query's) into a progress-only group
   * ({@code PROGRESS_COMMIT} on the SC, {@code AdminClient.commit_progress} of Python). The
   * first call creates the group ({@code kind: external}); an empty map only claims it.
   * Offsets are stored as given, also below the stored ones. Not retried here: the caller
   * ({@code ProgressMirror}) keeps a failed write pending for its next trigger.
   *
   * @param group the progress group
   * @param offsets next offset to read by {@code topic/partition}, in the order to send
   * @return {@code topic/partition} of the partitions the SC skipped (they no longer exist)
   * @throws FluvioException {@code GROUP_NOT_EMPTY} (the group has members), {@code
   *     INVALID_REQUEST} (a group of members, or a bad field), or a connection error
   */
  public java.util.List<String> commitProgress(String group, Map<String, Long> offsets) {
    Object skipped =
        scRequest(ApiKeys.PROGRESS_COMMIT, 0, progressCommitMeta(group, offsets))
            .decodeMeta().get("skipped");
    java.util.List<String> out = new java.util.ArrayList<>();
    if (skipped instanceof java.util.List<?> list) {
      for (Object o : list) {
        if (o instanceof Map<?, ?> m) {
          out.add(m.get("topic") + "/" + m.get("partition"));
        }
      }
    }
    return out;
  }

  /**
   * The meta of a {@code PROGRESS_COMMIT} request, as {@code ProgressCommitRequest.to_meta}
   * of Python builds it (pure; the shared vectors check it byte for byte).
   *
   * @param group the progress group
   * @param offsets next offset to read by {@code topic/partition}, in the order to send
   * @return {@code {"group", "offsets": [{"topic", "partition", "offset"}...]}}
   */
  public static Map<String, Object> progressCommitMeta(String group, Map<String, Long> offsets) {
    java.util.List<Map<String, Object>> given = new java.util.ArrayList<>();
    for (Map.Entry<String, Long> e : offsets.entrySet()) {
      String tp = e.getKey();
      int slash = tp.lastIndexOf('/');
      Map<String, Object> entry = new LinkedHashMap<>();
      entry.put("topic", tp.substring(0, slash));
      entry.put("partition", Integer.parseInt(tp.substring(slash + 1)));
      entry.put("offset", e.getValue());
      given.add(entry);
    }
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("group", group);
    meta.put("offsets", given);
    return meta;
  }

  /**
   * Set a topic's user columns ({@code UPDATE_TOPIC_SCHEMA}, the admin API's {@code
   * update_topic_schema}): a typed topic's next version, or an empty untyped topic's first.
   *
   * @param topic the topic
   * @param arrow the user columns, a base64 Arrow IPC schema message
   * @return the topic's schema after the update
   * @throws FluvioException {@code INVALID_CONFIG} (the SC's evolution rules, or an untyped
   *     topic that holds records) and {@code UNKNOWN_TOPIC}
   */
  public TopicSchema updateTopicSchema(String topic, String arrow) {
    Object updated =
        scRequest(ApiKeys.UPDATE_TOPIC_SCHEMA, 0, Map.of("name", topic, "arrow", arrow))
            .decodeMeta()
            .get("topic");
    Object spec = updated instanceof Map<?, ?> t ? t.get("spec") : null;
    Object schema = spec instanceof Map<?, ?> s ? s.get("topicSchema") : null;
    if (!(schema instanceof Map<?, ?> m)) {
      throw new FluvioException(
          ErrorCode.INVALID_REQUEST, "update schema reply: topic %s has no schema".formatted(topic));
    }
    return TopicSchema.fromSpec(m);
  }

  /**
   * Every topic name the SC knows ({@code LIST_TOPICS}), sorted ({@code list_topic_names}
   * of {@code datasource/resolve.py}).
   *
   * @return the names
   */
  public java.util.List<String> topicNames() {
    Object topics =
        scRequest(ApiKeys.LIST_TOPICS, 0, Map.of("names", java.util.List.of()))
            .decodeMeta().get("topics");
    java.util.TreeSet<String> names = new java.util.TreeSet<>();
    if (topics instanceof java.util.List<?> list) {
      for (Object t : list) {
        if (t instanceof Map<?, ?> m) {
          Object name = m.get("metadata") instanceof Map<?, ?> meta ? meta.get("name") : m.get("name");
          if (name != null) {
            names.add(name.toString());
          }
        }
      }
    }
    return java.util.List.copyOf(names);
  }

  /**
   * Whether the SC's metadata, asked afresh, replaced SPU {@code spuId} as the partition's
   * leader (and the fresh snapshot is cached); false when the SC cannot say now.
   */
  private boolean leaderReplaced(String topic, int partition, int spuId) {
    try {
      Metadata fresh = withSc(sc -> Metadata.load(sc, topic));
      metadata.put(topic, fresh);
      return fresh.replaced(partition, spuId);
    } catch (FluvioException e) {
      return false; // no fresher word: keep waiting for the reply (or the timeout)
    }
  }

  /**
   * The one way every request to a partition leader is sent (fetches, offsets, produce):
   * to the leader of the cached metadata, and while no reply has come, the SC is asked
   * again every {@link #WATCH_MS}; once it replaces that leader (a hung SPU) the request is
   * abandoned with {@code NOT_LEADER} and, like every retriable error, retried on the
   * leader of fresh metadata with the same fields: a fetch continues from the offset it
   * asked for, so nothing is skipped or read twice.
   *
   * @param tail the request's data tail (a produce's frame), or null for none
   * @param alsoRetry one more error code to retry within the timeout, or null
   */
  private Frame leaderRequest(
      String topic, int partition, int api, Map<String, Object> meta, byte[] tail, ErrorCode alsoRetry) {
    java.nio.ByteBuffer data = java.nio.ByteBuffer.wrap(tail == null ? new byte[0] : tail);
    return withLeader(
        topic,
        partition,
        (c, spuId) ->
            c.request(api, 0, meta, data.duplicate(), () -> leaderReplaced(topic, partition, spuId), WATCH_MS),
        alsoRetry);
  }

  /** A request to a partition's leader: the connection and the leader's SPU id. */
  @FunctionalInterface
  private interface LeaderCall {
    Frame apply(Connection leader, int spuId);
  }

  private Frame withLeader(String topic, int partition, LeaderCall call, ErrorCode alsoRetry) {
    long backoff = FIRST_BACKOFF_MS;
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (true) {
      try {
        Metadata known = metadata(topic);
        Endpoint leader = known.leader(partition);
        int spuId = known.leaderId(partition);
        return call.apply(connection(leader, () -> leaderReplaced(topic, partition, spuId)), spuId);
      } catch (FluvioException e) {
        boolean retry = e.retriable() || (alsoRetry != null && e.code() == alsoRetry);
        if (!retry || System.nanoTime() + backoff * 1_000_000L > deadline) {
          throw e;
        }
        metadata.remove(topic);
        connections.values().removeIf(Connection::isClosed);
        sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      }
    }
  }

  /**
   * The open connection to {@code endpoint}, opened (and the token presented) when there
   * is none; {@code abandon}, when not null, is asked every {@link #WATCH_MS} while the
   * token waits for its answer (a leader that hangs is given up as a request to it is).
   */
  private Connection connection(Endpoint endpoint, BooleanSupplier abandon) {
    Connection c = connections.get(endpoint);
    if (c == null || c.isClosed()) {
      c = Connection.open(endpoint, timeoutMs);
      if (token != null) {
        try {
          c.authenticate(token, abandon, WATCH_MS);
        } catch (FluvioException e) {
          c.close();
          throw e;
        }
      }
      connections.put(endpoint, c);
    }
    return c;
  }

  private static long num(Map<String, Object> meta, String name) {
    Object v = meta.get(name);
    if (v instanceof Number n) {
      return n.longValue();
    }
    throw new FluvioException(ErrorCode.INVALID_REQUEST, "reply lacks an integer '%s': %s".formatted(name, meta));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FluvioException(ErrorCode.CLIENT_CLOSED, "interrupted while retrying", e);
    }
  }

  @Override
  public void close() {
    connections.values().forEach(Connection::close);
    connections.clear();
  }
}

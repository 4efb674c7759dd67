package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A snapshot of what the SC knows about one topic: its partitions' leaders and the SPUs'
 * public endpoints ({@code DESCRIBE_TOPIC} and {@code LIST_SPUS}; the Python client
 * watches the same objects with {@code WATCH_METADATA}).
 *
 * @param topic the topic
 * @param leaders leader SPU id by partition index; -1 when the partition has none
 * @param spus public endpoint by SPU id, of the SPUs the SC does not mark offline (a
 *     partition whose leader is offline has no leader here, as {@code MetadataView.leader}
 *     of Python)
 * @param schema a typed topic's schema ({@code spec.topicSchema}), null for an untyped topic
 * @param tier the topic's tier directory (an fsspec URL, {@code spec.tier}), null when it
 *     is not tiered
 */
public record Metadata(
    String topic,
    List<Integer> leaders,
    Map<Integer, Endpoint> spus,
    TopicSchema schema,
    String tier) {

  /**
   * Ask the SC.
   *
   * @param sc a connection to the SC
   * @param topic the topic
   * @return the snapshot
   * @throws FluvioException {@code UNKNOWN_TOPIC} and the other errors of the SC
   */
  public static Metadata load(Connection sc, String topic) {
    Map<String, Object> described =
        sc.request(ApiKeys.DESCRIBE_TOPIC, 0, Map.of("name", topic)).decodeMeta();
    Object topicSpec = described.get("topic") instanceof Map<?, ?> t ? t.get("spec") : null;
    Object schema = topicSpec instanceof Map<?, ?> s ? s.get("topicSchema") : null;
    TopicSchema typed = schema instanceof Map<?, ?> m ? TopicSchema.fromSpec(m) : null;
    List<Integer> leaders = new ArrayList<>();
    for (Object p : list(described.get("partitions"))) {
      Object leader = map(map(p).get("status")).get("leader");
      leaders.add(leader instanceof Number n ? n.intValue() : -1);
    }
    Map<String, Object> listed = sc.request(ApiKeys.LIST_SPUS, 0, Map.of()).decodeMeta();
    Map<Integer, Endpoint> spus = new HashMap<>();
    for (Object s : list(listed.get("spus"))) {
      Object status = map(s).get("status");
      Object resolution = status instanceof Map<?, ?> st ? st.get("resolution") : null;
      if (resolution != null && resolution.toString().equalsIgnoreCase("offline")) {
        continue; // the SC marked it offline: it leads nothing reachable (leader() says so)
      }
      Map<String, Object> spec = map(map(s).get("spec"));
      Map<String, Object> pub = map(spec.get("publicEndpoint"));
      int id = ((Number) spec.get("spuId")).intValue();
      int port = ((Number) pub.get("port")).intValue();
      spus.put(id, new Endpoint(host(pub), port, sc.endpoint().tls()));  // SPUs: the SC's TLS
    }
    Object tier = topicSpec instanceof Map<?, ?> s ? s.get("tier") : null;
    return new Metadata(
        topic, List.copyOf(leaders), Map.copyOf(spus), typed, tier == null ? null : tier.toString());
  }

  /**
   * Whether a request in flight to SPU {@code spuId} for {@code partition} should fail over
   * ({@code replaced} of {@code spark_stream/client/leader.py}): another SPU leads it now,
   * or its leader is offline or unknown.
   *
   * @param partition the index
   * @param spuId the SPU the request went to
   * @return true when the request should be abandoned and sent to the new leader
   */
  public boolean replaced(int partition, int spuId) {
    if (partition < 0 || partition >= leaders.size()) {
      return true;
    }
    int now = leaders.get(partition);
    return now != spuId || !spus.containsKey(now);
  }

  /**
   * The SPU id of a partition's leader, -1 when it has none.
   *
   * @param partition the index (checked by {@link #leader})
   * @return the id
   */
  public int leaderId(int partition) {
    leader(partition);
    return leaders.get(partition);
  }

  /** Partitions of the topic. */
  public int partitionCount() {
    return leaders.size();
  }

  /**
   * The endpoint of a partition's leader.
   *
   * @param partition the index
   * @return the leader's public endpoint
   * @throws FluvioException {@code UNKNOWN_PARTITION} (no such index) or {@code NOT_LEADER}
   *     (no leader now, or its SPU is unknown): both retriable after a refresh
   */
  public Endpoint leader(int partition) {
    if (partition < 0 || partition >= leaders.size()) {
      throw new FluvioException(
          ErrorCode.UNKNOWN_PARTITION,
          "topic %s has no partition %d (it has %d)".formatted(topic, partition, leaders.size()));
    }
    Endpoint endpoint = spus.get(leaders.get(partition));
    if (endpoint == null) {
      throw new FluvioException(
          ErrorCode.NOT_LEADER, "partition %s/%d has no leader now".formatted(topic, partition));
    }
    return endpoint;
  }

  /** The first ingress address (hostname preferred), else localhost, as the Python model. */
  private static String host(Map<String, Object> publicEndpoint) {
    for (Object addr : list(publicEndpoint.getOrDefault("ingress", List.of()))) {
      Map<String, Object> a = map(addr);
      if (a.get("hostname") != null) {
        return a.get("hostname").toString();
      }
      if (a.get("ip") != null) {
        return a.get("ip").toString();
      }
    }
    return "localhost";
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object o) {
    if (o instanceof Map<?, ?> m) {
      return (Map<String, Object>) m;
    }
    throw new FluvioException(ErrorCode.INVALID_REQUEST, "metadata reply: expected a map, got " + o);
  }

  private static List<?> list(Object o) {
    if (o instanceof List<?> l) {
      return l;
    }
    throw new FluvioException(ErrorCode.INVALID_REQUEST, "metadata reply: expected a list, got " + o);
  }
}

package io.sparkstream.fluvio.client;

/** The api keys the connector speaks ({@code spark_stream/protocol/api.py}). */
public final class ApiKeys {
  private ApiKeys() {}

  /** Any server: the api keys and version ranges it accepts. */
  public static final int API_VERSIONS = 1;
  /** A client presents its token once per connection (SC and SPU public ports). */
  public static final int AUTHENTICATE = 2;

  /** SC: one topic and its partitions. */
  public static final int DESCRIBE_TOPIC = 1004;

  /** SC: a typed topic's next schema version, or an empty untyped topic's first. */
  public static final int UPDATE_TOPIC_SCHEMA = 1007;

  /** SC: every SPU and its endpoints. */
  public static final int LIST_SPUS = 1012;

  /** SPU: append batch frames to a partition on its leader. */
  public static final int PRODUCE = 3001;

  /** SPU: read batch frames from a partition leader. */
  public static final int FETCH = 3002;

  /** SPU: where a fetch's frames lie in the leader's segment file. */
  public static final int FETCH_LOCAL = 3005;

  /** SPU: a partition's log start, LEO and HW (and the offset for a time). */
  public static final int FETCH_OFFSETS = 3004;
  /** SC: a group's committed offsets. */
  public static final int OFFSET_FETCH = 5006;
  /** SC: one consumer group (fails with {@code UnknownGroupError} when there is none). */
  public static final int DESCRIBE_GROUP = 5011;
  /** SC: offsets of a progress-only group (a Spark query's {@code progressGroup}), unfenced. */
  public static final int PROGRESS_COMMIT = 5015;
  /** SC: topics by name ({@code names} empty: all). */
  public static final int LIST_TOPICS = 1003;

  /** SPU: a stream of frames as they become visible (with credit). */
  public static final int STREAM_FETCH = 3003;
}

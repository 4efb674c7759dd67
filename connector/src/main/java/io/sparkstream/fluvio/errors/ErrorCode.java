package io.sparkstream.fluvio.errors;

import java.util.HashMap;
import java.util.Map;

/**
 * The wire error codes of {@code spark_stream/errors.py}: code, the Python type name, and
 * whether a retry may succeed.
 *
 * <p>One table on each side; the shared vector {@code error_codes.json} (written by the
 * Python code) is checked against this enum by a JUnit test, so the two cannot drift. The
 * Python name is kept because error messages name it ("NotLeaderError: ..."), the same on
 * both sides.
 */
public enum ErrorCode {
  FLUVIO(1, "FluvioError", false),
  INVALID_REQUEST(2, "InvalidRequestError", false),
  CORRUPT_FRAME(3, "CorruptFrameError", false),
  CORRUPT_SEGMENT(4, "CorruptSegmentError", false),
  LOG_GAP(5, "LogGapError", false),
  OFFSET_OUT_OF_RANGE(6, "OffsetOutOfRangeError", false),
  RECORD_TOO_LARGE(7, "RecordTooLargeError", false),
  UNKNOWN_TOPIC(8, "UnknownTopicError", false),
  UNKNOWN_PARTITION(9, "UnknownPartitionError", true),
  NOT_LEADER(10, "NotLeaderError", true),
  NOT_ENOUGH_REPLICAS(11, "NotEnoughReplicasError", true),
  UNAUTHORIZED(12, "UnauthorizedError", false),
  INVALID_CONFIG(13, "InvalidConfigError", false),
  TOPIC_EXISTS(14, "TopicExistsError", false),
  REQUEST_TIMEOUT(15, "RequestTimeoutError", true),
  CONNECTION_CLOSED(16, "ConnectionClosedError", true),
  CONFLICT(17, "ConflictError", true),
  NOT_FOUND(18, "NotFoundError", false),
  UNSUPPORTED_VERSION(19, "UnsupportedVersionError", false),
  DUPLICATE_SEQUENCE(20, "DuplicateSequenceError", false),
  OUT_OF_ORDER_SEQUENCE(21, "OutOfOrderSequenceError", false),
  STORAGE(22, "StorageError", false),
  FENCED_LEADER_EPOCH(23, "FencedLeaderEpochError", true),
  UNKNOWN_LEADER_EPOCH(24, "UnknownLeaderEpochError", true),
  SCHEMA_MISMATCH(25, "SchemaMismatchError", false),
  OFFSET_NOT_AVAILABLE(26, "OffsetNotAvailableError", true),
  OBJECT_EXISTS(50, "ObjectExistsError", false),
  KV_UNAVAILABLE(51, "KvUnavailableError", true),
  SERVER_START(52, "ServerStartError", false),
  NOT_ACTIVE(53, "NotActiveError", true),
  INSUFFICIENT_RESOURCES(60, "InsufficientResourcesError", false),
  PARTITION_OFFLINE(61, "PartitionOfflineError", false),
  SPU_EXISTS(70, "SpuExistsError", false),
  PROVISION(71, "ProvisionError", false),
  TLS(80, "TlsError", false),
  CLIENT_CLOSED(90, "ClientClosedError", false),
  DATA_SOURCE_OPTION(100, "DataSourceOptionError", false),
  DATA_LOSS(101, "DataLossError", false),
  SINK_SCHEMA(102, "SinkSchemaError", false),
  JAR_FETCH(103, "JarFetchError", false),
  UNKNOWN_GROUP(110, "UnknownGroupError", false),
  UNKNOWN_MEMBER(111, "UnknownMemberError", false),
  FENCED_MEMBER(112, "FencedMemberError", false),
  MEMBER_ID_CONFLICT(113, "MemberIdConflictError", true),
  UNRELEASED_INSTANCE_ID(114, "UnreleasedInstanceIdError", true),
  GROUP_NOT_EMPTY(115, "GroupNotEmptyError", true),
  GATE_NOT_READY(116, "GateNotReadyError", true),
  AUTHENTICATION(120, "AuthenticationError", false),
  PERMISSION_DENIED(121, "PermissionDeniedError", false);

  private static final Map<Integer, ErrorCode> BY_CODE = new HashMap<>();

  static {
    for (ErrorCode c : values()) {
      BY_CODE.put(c.code, c);
    }
  }

  private final int code;
  private final String pythonName;
  private final boolean retriable;

  ErrorCode(int code, String pythonName, boolean retriable) {
    this.code = code;
    this.pythonName = pythonName;
    this.retriable = retriable;
  }

  /** The numeric code on the wire. */
  public int code() {
    return code;
  }

  /** The Python exception type's name, used in messages as Python does. */
  public String pythonName() {
    return pythonName;
  }

  /** True when the same request may succeed later (e.g. after a metadata refresh). */
  public boolean retriable() {
    return retriable;
  }

  /** The entry for a wire code; unknown codes map to {@link #FLUVIO}, as in Python. */
  public static ErrorCode forCode(int code) {
    return BY_CODE.getOrDefault(code, FLUVIO);
  }
}

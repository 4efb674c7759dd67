package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.IdempotentProducer;
import io.sparkstream.fluvio.client.LeaderClient;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.Compression;
import io.sparkstream.fluvio.records.Record;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * One write task: every row produced with an idempotent producer per topic, all under
 * the task's derived producer id ({@code write_task} of {@code datasource/writer.py}).
 * A row for a typed topic carries its user column values ({@link TypedSink}), and the
 * producer writes typed frames of the topic's schema.
 *
 * <p>A fresh writer routes rows and numbers them from the rows alone (key hash, a round
 * robin from 0, record-based sequences per partition), so a re-run of the same rows under
 * the same producer id gives every record the same sequence, which each leader drops as
 * a duplicate. A frame holds at most {@link #FRAME_RECORDS} records or {@code batchSize}
 * bytes of record data. Frames are sent as they fill, or once their oldest record waited {@link #LINGER_MS}
 * (a slow input, in real-time mode above all, need not wait for the batch's end): a
 * sender thread per topic sends them while the task goes on. Where a linger cut falls
 * depends on time, but a record's sequence does not (see {@link IdempotentProducer}), so
 * a re-run cut elsewhere still lands each record once. {@link #commit} sends the rest
 * and returns only once every frame is acknowledged.
 */
final class FluvioDataWriter implements DataWriter<InternalRow> {
  /** The most records in one frame, whatever their size. */
  static final int FRAME_RECORDS = 10_000;

  /**
   * How long a partial frame waits for more records: the Python producer's default
   * {@code linger_ms} ({@code ProducerConfig}); the Python writer has no option for it.
   */
  static final long LINGER_MS = 5;

  private final WriterOptions opts;
  private final SinkColumns columns;
  private final long producerId;
  private final int task;
  private final int headerKey;
  private final int headerValue;
  private final boolean headerValueIsString;
  private final Map<String, IdempotentProducer> producers = new TreeMap<>();
  private LeaderClient client;
  private BufferAllocator allocator;
  private long records;

  FluvioDataWriter(WriterOptions opts, SinkColumns columns, StructType schema, long producerId, int task) {
    this.opts = opts;
    this.columns = columns;
    this.producerId = producerId;
    this.task = task;
    if (columns.headers() >= 0) {
      StructType entry = (StructType) ((ArrayType) schema.fields()[columns.headers()].dataType()).elementType();
      this.headerKey = entry.fieldIndex("key");
      this.headerValue = entry.fieldIndex("value");
      this.headerValueIsString = entry.apply("value").dataType() instanceof StringType;
    } else {
      this.headerKey = -1;
      this.headerValue = -1;
      this.headerValueIsString = false;
    }
  }

  @Override
  public void write(InternalRow row) {
    if (columns.typed() == null && row.isNullAt(columns.value())) {
      throw new FluvioException(ErrorCode.SINK_SCHEMA, "column 'value' has 1 null value(s)");
    }
    String topic = opts.topic();
    if (topic == null) {
      if (row.isNullAt(columns.topic())) {
        throw new FluvioException(
            ErrorCode.SINK_SCHEMA, "column 'topic' has null values and no 'topic' option is set");
      }
      topic = row.getUTF8String(columns.topic()).toString();
    }
    Integer partition = null;
    if (columns.partition() >= 0) {
      if (row.isNullAt(columns.partition())) {
        throw new FluvioException(
            ErrorCode.INVALID_CONFIG, "partition column must be integers without nulls");
      }
      long p =
          switch (columns.partitionType()) {
            case "bigint" -> row.getLong(columns.partition());
            case "smallint" -> row.getShort(columns.partition());
            default -> row.getInt(columns.partition());
          };
      partition = (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, p));
    }
    producer(topic).send(record(row), partition);
    records++;
  }

  private Record record(InternalRow row) {
    TypedSink typed = columns.typed();
    byte[] value = null;
    if (typed == null) {
      value =
          columns.valueIsString()
              ? row.getUTF8String(columns.value()).getBytes()
              : row.getBinary(columns.value());
    }
    byte[] key = null;
    if (columns.key() >= 0 && !row.isNullAt(columns.key())) {
      key = columns.keyIsString() ? row.getUTF8String(columns.key()).getBytes() : row.getBinary(columns.key());
    }
    long ts =
        columns.timestamp() >= 0 && !row.isNullAt(columns.timestamp())
            ? row.getLong(columns.timestamp())
            : System.currentTimeMillis() * 1000;
    List<Record.Header> headers = null;
    if (columns.headers() >= 0 && !row.isNullAt(columns.headers())) {
      ArrayData array = row.getArray(columns.headers());
      headers = new ArrayList<>(array.numElements());
      for (int i = 0; i < array.numElements(); i++) {
        InternalRow h = array.getStruct(i, 2);
        byte[] hv = null;
        if (!h.isNullAt(headerValue)) {
          hv = headerValueIsString ? h.getUTF8String(headerValue).getBytes() : h.getBinary(headerValue);
        }
        headers.add(new Record.Header(h.getUTF8String(headerKey).toString(), hv));
      }
    }
    return new Record(key, value, ts, headers, typed == null ? null : typed.values(row));
  }

  private IdempotentProducer producer(String topic) {
    IdempotentProducer p = producers.get(topic);
    if (p == null) {
      if (client == null) {
        client = new LeaderClient(opts.endpoint(), 30_000, opts.token());
        allocator = new RootAllocator();
      }
      String setting;
      synchronized (client) { // the producers' sender threads share the client
        setting = client.topicCompression(topic);
        if (columns.typed() == null) {
          checkUntyped(topic, client.metadata(topic).schema());
        }
      }
      Compression codec = codecFor(topic, setting);
      p = new IdempotentProducer(
          client, topic, producerId, codec, opts.acksCode(), FRAME_RECORDS, opts.batchSize(),
          LINGER_MS, allocator);
      producers.put(topic, p);
    }
    return p;
  }

  /**
   * Refuse untyped records for a typed topic, saying what to write instead ({@code
   * _check_untyped} of {@code datasource/writer.py}).
   *
   * @throws FluvioException {@code SCHEMA_MISMATCH}: the topic is typed
   */
  private void checkUntyped(String topic, io.sparkstream.fluvio.records.TopicSchema schema) {
    if (schema != null) {
      throw new FluvioException(
          ErrorCode.SCHEMA_MISMATCH, SinkColumns.typedTopicRefused(topic, schema.names(), opts.topic() == null));
    }
  }

  /** The codec a topic takes ({@code ProducerConfig.for_topic} in Python). */
  private Compression codecFor(String topic, String setting) {
    if (setting.equals("any")) {
      return opts.compression() == null ? Compression.NONE : opts.compression();
    }
    Compression codec;
    try {
      codec = Compression.valueOf(setting.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new FluvioException(
          ErrorCode.INVALID_CONFIG, "topic '%s' has an unknown compression '%s'".formatted(topic, setting));
    }
    if (opts.compression() != null && opts.compression() != codec) {
      throw new FluvioException(
          ErrorCode.INVALID_CONFIG,
          ("compression: topic '%s' stores %s batches (its compression setting), not %s: "
                  + "leave compression unset or use %s")
              .formatted(topic, setting, opts.compression().wireName(), setting));
    }
    return codec;
  }

  @Override
  public WriterCommitMessage commit() {
    for (IdempotentProducer p : producers.values()) {
      p.flush();
    }
    return new FluvioCommitMessage(task, producerId, records, List.copyOf(producers.keySet()));
  }

  @Override
  public void abort() {
    // Nothing to undo: what was appended stays, and a re-run is deduplicated.
  }

  @Override
  public void close() {
    producers.values().forEach(IdempotentProducer::close); // their senders use the allocator
    producers.clear();
    if (client != null) {
      client.close();
      allocator.close();
      client = null;
    }
  }
}

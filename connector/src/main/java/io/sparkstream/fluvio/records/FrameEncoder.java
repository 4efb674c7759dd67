package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.compression.NoCompressionCodec;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Encoding records as one batch frame: Python's {@code encode_records} / {@code
 * encode_batch}.
 *
 * <p>The records become a root of {@link RecordSchema#SCHEMA}, Arrow Java writes it as one
 * encapsulated IPC record-batch message (buffers compressed with lz4 frames or zstd as
 * the codec asks), and {@link BatchHeader#encode} puts the 56-byte header and crc around
 * it. The header fields are Python's exactly. The payload bytes are not: Arrow Java and
 * Arrow C++ lay out the same batch differently (validity buffers written when nothing is
 * null, buffer compression frames, flatbuffer layout), so the shared vectors check that a
 * Java frame decodes (in Java and in Python) to the same records with the same header
 * fields, not that it is byte for byte Python's. Deduplication does not need equal bytes:
 * the leader recognises a re-sent frame by its producer id and sequence.
 */
public final class FrameEncoder {
  private FrameEncoder() {}

  /**
   * One frame of {@code records}.
   *
   * @param records at least one record
   * @param compression the Arrow buffer compression
   * @param producerId idempotent producer id, -1 for none
   * @param sequence idempotent producer sequence, -1 for none
   * @param allocator where the temporary Arrow buffers live
   * @return the frame bytes, base offset 0
   * @throws IllegalArgumentException no records
   */
  public static byte[] encode(
      List<Record> records,
      Compression compression,
      long producerId,
      int sequence,
      BufferAllocator allocator) {
    return encode(records, null, compression, producerId, sequence, allocator);
  }

  /**
   * One frame of {@code records}: untyped records as {@link #encode(List, Compression,
   * long, int, BufferAllocator)} does, or typed rows (records with {@code columns}) as a
   * typed frame of the topic's latest schema version: the storage schema's IPC message,
   * then the record batch of the user columns, {@code key}, {@code timestamp}, {@code
   * headers}, with the version in the header (Python's {@code encode_batch(...,
   * schema_version=v)}).
   *
   * <p>A typed row's values are, by Arrow type: {@code Boolean}; {@code Byte}, {@code
   * Short}, {@code Integer}, {@code Long} (any {@code Number}) for signed integers; {@code
   * Float}, {@code Double}; {@code BigDecimal} for decimals; {@code byte[]} for strings
   * (UTF-8) and binary; {@code Integer} days for {@code date32}; {@code Long} microseconds
   * for timestamps of any unit; null for null. A row shorter than the schema (written in an
   * older version) is null in the columns it lacks.
   *
   * @param typed the topic's schema, used for records with columns; null for untyped topics
   * @throws FluvioException {@code SCHEMA_MISMATCH}: a value that does not fit its column
   *     (a timestamp finer than the column's unit, a decimal of a larger scale)
   */
  public static byte[] encode(
      List<Record> records,
      TopicSchema typed,
      Compression compression,
      long producerId,
      int sequence,
      BufferAllocator allocator) {
    if (records.isEmpty()) {
      throw new IllegalArgumentException("a batch frame holds at least one record");
    }
    boolean typedRows = records.get(0).typed();
    if (typedRows && typed == null) {
      throw new FluvioException(
          ErrorCode.SCHEMA_MISMATCH, "typed rows for a topic that has no schema (it is untyped)");
    }
    Schema schema = typedRows ? typed.storageSchema(typed.version()) : RecordSchema.SCHEMA;
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
      root.allocateNew();
      if (typedRows) {
        TypedRows.fill(root, typed, records);
      }
      fill(root, records);
      long first = records.get(0).timestampUs();
      long max = first;
      for (Record r : records) {
        max = Math.max(max, r.timestampUs());
      }
      byte[] payload = payload(root, compression, typedRows ? schema : null);
      BatchHeader header =
          new BatchHeader(
              0, records.size(), first, max, 0, 0, producerId, sequence, compression.code(),
              typedRows ? typed.version() : 0);
      return header.encode(payload);
    }
  }

  /**
   * The encapsulated IPC message of {@code root}: continuation, metadata, body; after the
   * schema's message when {@code schema} is given (a typed frame).
   */
  private static byte[] payload(VectorSchemaRoot root, Compression compression, Schema schema) {
    CompressionCodec codec =
        switch (compression) {
          case NONE -> NoCompressionCodec.INSTANCE;
          case LZ4 ->
              CommonsCompressionFactory.INSTANCE.createCodec(CompressionUtil.CodecType.LZ4_FRAME);
          case ZSTD ->
              CommonsCompressionFactory.INSTANCE.createCodec(CompressionUtil.CodecType.ZSTD);
        };
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ArrowRecordBatch batch = new VectorUnloader(root, true, codec, true).getRecordBatch()) {
      WriteChannel channel = new WriteChannel(Channels.newChannel(out));
      if (schema != null) {
        MessageSerializer.serialize(channel, schema, IpcOption.DEFAULT);
      }
      MessageSerializer.serialize(channel, batch, IpcOption.DEFAULT);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** The system columns (and an untyped record's value); the vectors are allocated. */
  private static void fill(VectorSchemaRoot root, List<Record> records) {
    int n = records.size();
    VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
    VarBinaryVector values = (VarBinaryVector) root.getVector("value"); // null when typed
    TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector("timestamp");
    ListVector headers = (ListVector) root.getVector("headers");
    StructVector entries = (StructVector) headers.getDataVector();
    VarCharVector hKeys = (VarCharVector) entries.getChild("key");
    VarBinaryVector hValues = (VarBinaryVector) entries.getChild("value");
    int entry = 0;
    for (int i = 0; i < n; i++) {
      Record r = records.get(i);
      if (r.key() == null) {
        keys.setNull(i);
      } else {
        keys.setSafe(i, r.key());
      }
      if (values != null) {
        values.setSafe(i, r.value());
      }
      ts.setSafe(i, r.timestampUs());
      if (r.headers() == null) {
        headers.setNull(i);
        continue;
      }
      headers.startNewValue(i);
      for (Record.Header h : r.headers()) {
        entries.setIndexDefined(entry);
        hKeys.setSafe(entry, h.key().getBytes(StandardCharsets.UTF_8));
        if (h.value() == null) {
          hValues.setNull(entry);
        } else {
          hValues.setSafe(entry, h.value());
        }
        entry++;
      }
      headers.endValue(i, r.headers().size());
    }
    hKeys.setValueCount(entry);
    hValues.setValueCount(entry);
    entries.setValueCount(entry);
    headers.setValueCount(n);
    keys.setValueCount(n);
    if (values != null) {
      values.setValueCount(n);
    }
    ts.setValueCount(n);
    root.setRowCount(n);
  }
}

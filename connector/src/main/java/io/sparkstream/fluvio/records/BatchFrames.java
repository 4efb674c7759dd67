package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.ValueVectorUtility;

/**
 * Walking and decoding batch frames: Python's {@code iter_frames} and {@code
 * decode_frame(s)}.
 *
 * <p>Decoding reads the payload's encapsulated IPC message into Arrow buffers owned by
 * the caller's allocator (lz4 and zstd buffers are decompressed by Arrow's commons
 * codecs), loads them into a {@link VectorSchemaRoot} of {@link RecordSchema#SCHEMA} (an
 * untyped frame) or of the schema a typed frame carries before its records (schema
 * version >= 1: a typed topic's user columns, then {@code key}, {@code timestamp}, {@code
 * headers}), and validates it fully: a frame from the network or a file is untrusted input, and a
 * damaged one must fail as {@code CorruptFrameError}, never reach Spark.
 */
public final class BatchFrames {
  private BatchFrames() {}

  /**
   * Split a buffer of back-to-back frames (as a fetch returns them) into frames.
   *
   * @param buf the frames, from position 0 to the limit
   * @param checkCrc verify each frame's crc
   * @return the frames, in order
   * @throws FluvioException {@code CORRUPT_FRAME} at the first torn or damaged frame
   */
  public static List<FrameSlice> split(ByteBuffer buf, boolean checkCrc) {
    List<FrameSlice> out = new ArrayList<>();
    int pos = 0;
    while (pos < buf.limit()) {
      BatchHeader header = checkCrc ? BatchHeader.verify(buf, pos) : BatchHeader.read(buf, pos);
      long end = pos + header.frameLength();
      if (end > buf.limit()) {
        throw new FluvioException(ErrorCode.CORRUPT_FRAME, "truncated payload at byte " + pos);
      }
      out.add(new FrameSlice(header, buf.duplicate().limit((int) end).position(pos).slice()));
      pos = (int) end;
    }
    return out;
  }

  /**
   * Decode one frame's payload into a new root of {@link RecordSchema#SCHEMA}, or of the
   * schema a typed frame carries; the caller closes it.
   *
   * @param slice the frame
   * @param allocator where the Arrow buffers are allocated
   * @return the records; row {@code i} has offset {@code header.baseOffset() + i}
   * @throws FluvioException {@code CORRUPT_FRAME}: the payload is not a valid record batch
   *     of the schema, or its row count differs from the header's
   */
  public static VectorSchemaRoot decode(FrameSlice slice, BufferAllocator allocator) {
    RecordBatchSource copied =
        () -> {
          try (ReadChannel in = new ReadChannel(new ByteBufferChannel(slice.payload()))) {
            Schema schema = RecordSchema.SCHEMA;
            if (slice.header().typed()) {
              schema = MessageSerializer.deserializeSchema(in);
              if (schema == null) {
                throw new IOException("a typed frame does not start with its schema");
              }
            }
            return new Payload(schema, MessageSerializer.deserializeRecordBatch(in, allocator));
          }
        };
    return load(slice.header(), copied, true, allocator);
  }

  /** Where a frame's record batch message comes from (copied, or read in place). */
  @FunctionalInterface
  interface RecordBatchSource {
    /** The frame's schema and record batch (null when the payload holds none). */
    Payload read() throws IOException;
  }

  /**
   * A frame's decoded payload.
   *
   * @param schema {@link RecordSchema#SCHEMA}, or the schema a typed frame carries
   * @param batch its record batch, or null when the payload holds none
   */
  record Payload(Schema schema, ArrowRecordBatch batch) implements AutoCloseable {
    @Override
    public void close() {
      if (batch != null) {
        batch.close();
      }
    }
  }

  /**
   * Load a frame's record batch into a root of its schema, checked as every reader
   * checks it (optionally {@code validateFull}, and the header's row count).
   *
   * @throws FluvioException {@code CORRUPT_FRAME}: the payload is not a valid record batch
   *     of the schema, or its row count differs from the header's
   */
  static VectorSchemaRoot load(
      BatchHeader header, RecordBatchSource source, boolean validate, BufferAllocator allocator) {
    VectorSchemaRoot root = null;
    try (Payload payload = source.read()) {
      if (payload == null || payload.batch() == null) {
        throw new IOException("no record batch message");
      }
      root = VectorSchemaRoot.create(payload.schema(), allocator);
      new VectorLoader(root, CommonsCompressionFactory.INSTANCE).load(payload.batch());
      if (validate) {
        ValueVectorUtility.validateFull(root);
      }
    } catch (IOException | RuntimeException e) {
      if (root != null) {
        root.close();
      }
      if (e instanceof FluvioException f) {
        throw f;
      }
      throw new FluvioException(
          ErrorCode.CORRUPT_FRAME,
          "the payload of %s is not a record batch of the schema: %s"
              .formatted(header.frameRange(), e.getMessage()),
          e);
    }
    if (root.getRowCount() != header.recordCount()) {
      int rows = root.getRowCount();
      root.close();
      throw new FluvioException(
          ErrorCode.CORRUPT_FRAME,
          "the payload of %s has %d rows but its header says %d"
              .formatted(header.frameRange(), rows, header.recordCount()));
    }
    return root;
  }
}

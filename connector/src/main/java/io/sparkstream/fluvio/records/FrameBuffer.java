package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Zero-copy decoding of a buffer of back-to-back batch frames (what one fetch returns).
 *
 * <p>Theory of operation: the whole buffer becomes one {@link ArrowBuf}. A direct buffer
 * (a memory-mapped segment range) is wrapped where it lies ({@link
 * BufferAllocator#wrapForeignAllocation}); a heap buffer (a network reply) is copied once
 * into a direct one. Each frame's Arrow message is then read in place: its flatbuffer
 * metadata from the buffer, its body as a slice of the {@code ArrowBuf}, so every
 * uncompressed vector buffer is a slice of the fetched bytes (lz4 and zstd buffers are
 * decompressed into new ones). Each decoded root holds a reference on the whole buffer,
 * which is freed once the caller {@link #close()}s it and every root is closed; the
 * wrapped mapping stays reachable until then, so it is not unmapped under a vector.
 *
 * <p>Frames are untrusted: the crc of every frame is checked when the buffer is split
 * and, unless the caller turns it off, the Arrow data is checked with {@code
 * validateFull}, so a damaged frame fails as {@code CorruptFrameError} and never reaches
 * Spark. Arrow's own bounds checks stay on either way.
 */
public final class FrameBuffer implements AutoCloseable {
  private static final int CONTINUATION = 0xFFFFFFFF;

  private final ByteBuffer bytes;
  private final ArrowBuf whole;
  private final List<BatchHeader> headers = new ArrayList<>();
  private final List<Integer> positions = new ArrayList<>();
  private boolean closed;

  private FrameBuffer(ByteBuffer bytes, ArrowBuf whole) {
    this.bytes = bytes;
    this.whole = whole;
  }

  /**
   * Split {@code frames} into frames (checking each crc when asked) and make its bytes
   * Arrow memory of {@code allocator}.
   *
   * @param frames back-to-back frames, position 0 to the limit; direct buffers are used in
   *     place and must not change while the result or any root decoded from it is open
   * @param checkCrc verify each frame's crc
   * @param allocator the allocator that accounts for the memory
   * @return the frames; close it when no more frames will be decoded from it
   * @throws FluvioException {@code CORRUPT_FRAME} at the first torn or damaged frame
   */
  public static FrameBuffer of(ByteBuffer frames, boolean checkCrc, BufferAllocator allocator) {
    ByteBuffer bytes = frames.duplicate().position(0);
    List<BatchHeader> headers = new ArrayList<>();
    List<Integer> positions = new ArrayList<>();
    int pos = 0;
    while (pos < bytes.limit()) {
      BatchHeader header = checkCrc ? BatchHeader.verify(bytes, pos) : BatchHeader.read(bytes, pos);
      long end = pos + header.frameLength();
      if (end > bytes.limit()) {
        throw new FluvioException(ErrorCode.CORRUPT_FRAME, "truncated payload at byte " + pos);
      }
      headers.add(header);
      positions.add(pos);
      pos = (int) end;
    }
    FrameBuffer out = new FrameBuffer(bytes, arrowBuf(bytes, allocator));
    out.headers.addAll(headers);
    out.positions.addAll(positions);
    return out;
  }

  private static ArrowBuf arrowBuf(ByteBuffer bytes, BufferAllocator allocator) {
    long size = bytes.limit();
    if (bytes.isDirect() && size > 0) {
      long address = MemoryUtil.getByteBufferAddress(bytes);
      return allocator.wrapForeignAllocation(
          new ForeignAllocation(size, address) {
            // Holds the buffer (and so the mapping) for as long as Arrow uses its memory.
            @SuppressWarnings("unused")
            private final ByteBuffer owner = bytes;

            @Override
            protected void release0() {
              // A mapping is unmapped by the GC once unreachable; nothing to free here.
            }
          });
    }
    ArrowBuf copy = allocator.buffer(Math.max(size, 1));
    copy.setBytes(0, bytes.duplicate().position(0));
    return copy;
  }

  /** The number of frames. */
  public int size() {
    return headers.size();
  }

  /**
   * The header of frame {@code i}.
   *
   * @param i the frame's index
   * @return its header (crc-checked when the buffer was made with {@code checkCrc})
   */
  public BatchHeader header(int i) {
    return headers.get(i);
  }

  /**
   * Decode frame {@code i} into a new root of {@link RecordSchema#SCHEMA} (or, for a typed
   * frame, of the schema it carries) whose uncompressed buffers are slices of this buffer;
   * the caller closes it.
   *
   * @param i the frame's index
   * @param validate check the Arrow data fully ({@code validateFull})
   * @param allocator where decompressed buffers are allocated (the buffer's own allocator,
   *     or a child of its root)
   * @return the records; row {@code j} has offset {@code header(i).baseOffset() + j}
   * @throws FluvioException {@code CORRUPT_FRAME}: the payload is not a valid record batch
   *     of the schema, or its row count differs from the header's
   */
  public VectorSchemaRoot decode(int i, boolean validate, BufferAllocator allocator) {
    if (closed) {
      throw new IllegalStateException("frame buffer is closed");
    }
    BatchHeader header = headers.get(i);
    int payload = positions.get(i) + BatchHeader.SIZE;
    int end = (int) (positions.get(i) + header.frameLength());
    return BatchFrames.load(header, () -> recordBatch(header, payload, end), validate, allocator);
  }

  /**
   * The frame's encapsulated IPC message(s), read in place: {@code [payload, end)}. A
   * typed frame's schema message comes first (its metadata only: it has no body).
   */
  private BatchFrames.Payload recordBatch(BatchHeader header, int payload, int end) throws IOException {
    int at = payload;
    Schema schema = RecordSchema.SCHEMA;
    if (header.typed()) {
      Message head = message(at, end, "a typed frame does not start with its schema");
      if (head.flatbuf().headerType() != org.apache.arrow.flatbuf.MessageHeader.Schema) {
        throw new IOException("a typed frame does not start with its schema");
      }
      schema = MessageSerializer.deserializeSchema(head.flatbuf());
      at = (int) (head.bodyStart() + head.bodyLength());
    }
    Message message = message(at, end, "no record batch message");
    if (message.flatbuf().headerType() != org.apache.arrow.flatbuf.MessageHeader.RecordBatch) {
      throw new IOException("no record batch message");
    }
    long bodyStart = message.bodyStart();
    long bodyLength = message.bodyLength();
    if (bodyLength < 0 || bodyStart + bodyLength > end) {
      throw new IOException("message body of %d bytes does not fit the payload".formatted(bodyLength));
    }
    ArrowBuf body = whole.slice(bodyStart, bodyLength);
    // deserializeRecordBatch releases the body once; slices share the whole buffer's count.
    whole.getReferenceManager().retain();
    try {
      return new BatchFrames.Payload(
          schema, MessageSerializer.deserializeRecordBatch(message.metadata(), body));
    } catch (IOException | RuntimeException e) {
      whole.getReferenceManager().release(); // it failed before its own release
      throw e;
    }
  }

  /** The metadata of the encapsulated message at {@code at}, read in place. */
  private Message message(int at, int end, String missing) throws IOException {
    ByteBuffer le = bytes.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN);
    if (end - at < 4) {
      throw new IOException(missing);
    }
    int metaLength = le.getInt(at);
    at += 4;
    if (metaLength == CONTINUATION) {
      if (end - at < 4) {
        throw new IOException(missing);
      }
      metaLength = le.getInt(at);
      at += 4;
    }
    if (metaLength <= 0 || metaLength > end - at) {
      throw new IOException("message metadata of %d bytes does not fit the payload".formatted(metaLength));
    }
    ByteBuffer meta = bytes.duplicate().limit(at + metaLength).position(at).slice();
    return new Message(MessageMetadataResult.create(meta, metaLength), (long) at + metaLength);
  }

  /** An encapsulated message's metadata, and where its body starts in the buffer. */
  private record Message(MessageMetadataResult metadata, long bodyStart) {
    org.apache.arrow.flatbuf.Message flatbuf() {
      return metadata.getMessage();
    }

    long bodyLength() {
      return metadata.getMessageBodyLength();
    }
  }

  /** Drop this buffer's own reference; memory is freed once every decoded root is closed. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      whole.getReferenceManager().release();
    }
  }
}

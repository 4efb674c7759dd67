package io.sparkstream.fluvio.records;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The fixed 56-byte header of a batch frame, as {@code spark_stream/records.py} defines it.
 *
 * <p>Theory of operation. A batch frame is this little-endian header followed by one Arrow
 * IPC record-batch message (an untyped frame's carries no schema; a typed one's does):
 *
 * <pre>
 *  off size field
 *    0    4 magic            "FLVB"
 *    4    4 payload_length   bytes of the Arrow message that follow the header
 *    8    8 base_offset      offset of row 0; rewritten by the leader, so not in the crc
 *   16    4 crc32c           over bytes [20, 56 + payload_length): header tail + payload
 *   20    1 version          1
 *   21    1 attributes       bits 0-1: compression codec (0 none, 1 lz4, 2 zstd)
 *   22    2 schema_version   0: an untyped topic's record ({@link RecordSchema}); v >= 1:
 *                            the typed topic's schema version the batch was written in,
 *                            and then the payload starts with that schema's IPC message
 *   24    4 record_count     rows in the batch
 *   28    4 sequence         idempotent producer sequence, -1 when none
 *   32    8 first_timestamp  microseconds since the epoch, UTC
 *   40    8 max_timestamp    microseconds since the epoch, UTC
 *   48    8 producer_id      idempotent producer id, -1 when none
 * </pre>
 *
 * Row {@code i} has offset {@code base_offset + i}. The checks and their messages are those
 * of Python's {@code read_header} and {@code verify_frame}, word for word (the shared test
 * vectors hold Python's messages).
 *
 * @param baseOffset offset of row 0
 * @param recordCount rows in the batch
 * @param firstTimestamp timestamp of row 0, microseconds since the epoch
 * @param maxTimestamp largest timestamp, microseconds since the epoch
 * @param payloadLength bytes of the Arrow message after the header
 * @param crc the stored crc32c (unsigned)
 * @param producerId idempotent producer id, -1 when none
 * @param sequence idempotent producer sequence, -1 when none
 * @param attributes the attributes byte (compression codec in bits 0-1)
 * @param schemaVersion 0 for untyped records, else the typed topic's schema version
 */
public record BatchHeader(
    long baseOffset,
    int recordCount,
    long firstTimestamp,
    long maxTimestamp,
    long payloadLength,
    long crc,
    long producerId,
    int sequence,
    int attributes,
    int schemaVersion) {

  /** An untyped frame's header (schema version 0). */
  public BatchHeader(
      long baseOffset, int recordCount, long firstTimestamp, long maxTimestamp, long payloadLength,
      long crc, long producerId, int sequence, int attributes) {
    this(baseOffset, recordCount, firstTimestamp, maxTimestamp, payloadLength, crc, producerId,
        sequence, attributes, 0);
  }

  /** Whether the frame is typed: its payload carries its schema before the records. */
  public boolean typed() {
    return schemaVersion != 0;
  }

  /** Bytes of the header. */
  public static final int SIZE = 56;

  /** The magic bytes that open every frame. */
  public static final byte[] MAGIC = "FLVB".getBytes(StandardCharsets.US_ASCII);

  /** The only frame version. */
  public static final int VERSION = 1;

  private static final int CRC_START = 20;
  private static final long MAX_PAYLOAD = Integer.MAX_VALUE;

  /** Bytes of the whole frame, header included. */
  public long frameLength() {
    return SIZE + payloadLength;
  }

  /** Offset the batch after this one starts at. */
  public long nextOffset() {
    return baseOffset + recordCount;
  }

  /** The frame's offsets as error messages name them (as Python's {@code frame_range}). */
  public String frameRange() {
    return "the frame of offsets [%d, %d]".formatted(baseOffset, lastOffset());
  }

  /** Offset of the last record. */
  public long lastOffset() {
    return baseOffset + recordCount - 1;
  }

  /** The codec the producer compressed the Arrow buffers with. */
  public Compression compression() {
    return Compression.ofAttributes(attributes);
  }

  /**
   * Parse and sanity-check the header at {@code pos} without touching the payload.
   *
   * @param buf the bytes (its position and byte order are not used or changed)
   * @param pos where the frame starts
   * @return the header
   * @throws FluvioException {@code CORRUPT_FRAME}: too few bytes, bad magic or version, or
   *     impossible fields
   */
  public static BatchHeader read(ByteBuffer buf, int pos) {
    ByteBuffer b = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int available = b.limit() - pos;
    if (available < SIZE) {
      throw corrupt(
          "truncated frame header at byte %d: %d of %d bytes".formatted(pos, available, SIZE));
    }
    byte[] magic = new byte[4];
    b.get(pos, magic);
    long length = Integer.toUnsignedLong(b.getInt(pos + 4));
    long base = b.getLong(pos + 8);
    long crc = Integer.toUnsignedLong(b.getInt(pos + 16));
    int version = b.get(pos + 20) & 0xFF;
    int attributes = b.get(pos + 21) & 0xFF;
    int schemaVersion = b.getShort(pos + 22) & 0xFFFF;
    int count = b.getInt(pos + 24);
    int sequence = b.getInt(pos + 28);
    long firstTs = b.getLong(pos + 32);
    long maxTs = b.getLong(pos + 40);
    long producer = b.getLong(pos + 48);
    if (!java.util.Arrays.equals(magic, MAGIC)) {
      throw corrupt(
          "bad magic %s at byte %d, expected %s"
              .formatted(PyRepr.bytes(magic), pos, PyRepr.bytes(MAGIC)));
    }
    if (version != VERSION) {
      throw corrupt("unsupported frame version %d at byte %d".formatted(version, pos));
    }
    if (count <= 0) {
      throw corrupt("record count %d at byte %d is not positive".formatted(count, pos));
    }
    if (base < 0) {
      throw corrupt("negative base offset %d at byte %d".formatted(base, pos));
    }
    if (length > MAX_PAYLOAD || length == 0) {
      throw corrupt("impossible payload length %d at byte %d".formatted(length, pos));
    }
    if ((attributes & Compression.CODEC_BITS) == 3) {
      throw corrupt("unknown compression codec in attributes 0x%x".formatted(attributes));
    }
    return new BatchHeader(
        base, count, firstTs, maxTs, length, crc, producer, sequence, attributes, schemaVersion);
  }

  /**
   * Parse the header at {@code pos} and check the payload is whole and its crc matches.
   *
   * @param buf the bytes
   * @param pos where the frame starts
   * @return the header
   * @throws FluvioException {@code CORRUPT_FRAME}, naming the first thing that is wrong
   */
  public static BatchHeader verify(ByteBuffer buf, int pos) {
    BatchHeader header = read(buf, pos);
    long end = pos + header.frameLength();
    if (end > buf.limit()) {
      throw corrupt(
          "truncated payload at byte %d: %d of %d bytes"
              .formatted(pos, buf.limit() - pos - SIZE, header.payloadLength));
    }
    long actual = crc32c(buf, pos + CRC_START, (int) end);
    if (actual != header.crc) {
      throw corrupt(
          "crc mismatch in %s at byte %d: stored %s, computed %s"
              .formatted(header.frameRange(), pos, PyRepr.hex8(header.crc), PyRepr.hex8(actual)));
    }
    return header;
  }

  /**
   * A whole frame: this header's fields (its {@code crc} and {@code payloadLength} are
   * recomputed from {@code payload}) followed by the payload, exactly as Python's
   * {@code encode_batch} lays it out.
   *
   * @param payload the encapsulated Arrow IPC record-batch message (preceded by the schema
   *     message in a typed frame)
   * @return the frame bytes
   */
  public byte[] encode(byte[] payload) {
    ByteBuffer out = ByteBuffer.allocate(SIZE + payload.length).order(ByteOrder.LITTLE_ENDIAN);
    out.put(MAGIC)
        .putInt(payload.length)
        .putLong(baseOffset)
        .putInt(0)
        .put((byte) VERSION)
        .put((byte) attributes)
        .putShort((short) schemaVersion)
        .putInt(recordCount)
        .putInt(sequence)
        .putLong(firstTimestamp)
        .putLong(maxTimestamp)
        .putLong(producerId)
        .put(payload);
    long crc = crc32c(out, CRC_START, out.capacity());
    out.putInt(16, (int) crc);
    return out.array();
  }

  /**
   * A copy of {@code frame} whose header carries {@code baseOffset} (outside the crc), as
   * the leader rewrites it on append.
   *
   * @param frame one frame
   * @param baseOffset the new base offset
   * @return the copy
   */
  public static byte[] withBaseOffset(byte[] frame, long baseOffset) {
    byte[] out = frame.clone();
    ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN).putLong(8, baseOffset);
    return out;
  }

  private static long crc32c(ByteBuffer buf, int from, int to) {
    CRC32C crc = new CRC32C();
    crc.update(buf.duplicate().limit(to).position(from));
    return crc.getValue();
  }

  private static FluvioException corrupt(String message) {
    return new FluvioException(ErrorCode.CORRUPT_FRAME, message);
  }
}

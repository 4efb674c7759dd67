package io.sparkstream.fluvio.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class FrameBufferTest {
  private static final JsonNode VECTORS = Vectors.load("batch_frames.json");
  private BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close(); // fails the test if a root or the wrapped buffer leaked
  }

  private static ByteBuffer direct(byte[] bytes) {
    return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
  }

  @Test
  void decodesEveryCompressionFromDirectAndHeapBuffers() {
    List<String> seen = new ArrayList<>();
    for (JsonNode v : VECTORS.get("frames")) {
      byte[] bytes = Vectors.hex(v.get("bytes"));
      for (ByteBuffer buf : List.of(direct(bytes), ByteBuffer.wrap(bytes))) {
        try (FrameBuffer frames = FrameBuffer.of(buf, true, allocator)) {
          assertEquals(1, frames.size());
          try (VectorSchemaRoot root = frames.decode(0, true, allocator)) {
            BatchFramesTest.assertRecords(v.get("records"), root);
          }
        }
      }
      seen.add(v.get("compression").asText());
    }
    assertEquals(List.of("none", "lz4", "zstd"), seen);
  }

  @Test
  void uncompressedValuesAreSlicesOfTheDirectBufferNotCopies() {
    JsonNode v = VECTORS.get("frames").get(0);
    assertEquals("none", v.get("compression").asText());
    ByteBuffer buf = direct(Vectors.hex(v.get("bytes")));
    long start = MemoryUtil.getByteBufferAddress(buf);
    long end = start + buf.limit();
    try (FrameBuffer frames = FrameBuffer.of(buf, true, allocator);
        VectorSchemaRoot root = frames.decode(0, true, allocator)) {
      VarBinaryVector values = (VarBinaryVector) root.getVector("value");
      long data = values.getDataBuffer().memoryAddress();
      long offsets = values.getOffsetBuffer().memoryAddress();
      assertTrue(data >= start && data < end, "value data lies in the fetched bytes");
      assertTrue(offsets >= start && offsets < end, "value offsets lie in the fetched bytes");
      // Beyond the wrapped bytes only a few bytes of bookkeeping, far less than the values.
      assertTrue(allocator.getAllocatedMemory() - buf.limit() < values.getDataBuffer().capacity() / 10,
          "values were not copied");
    }
  }

  @Test
  void rootsOutliveTheBufferThatMadeThem() {
    JsonNode log = VECTORS.get("log");
    ByteBuffer buf = direct(Vectors.hex(log.get("bytes")));
    List<VectorSchemaRoot> roots = new ArrayList<>();
    try (FrameBuffer frames = FrameBuffer.of(buf, true, allocator)) {
      assertEquals(3, frames.size());
      for (int i = 0; i < 3; i++) {
        assertEquals(log.get("base_offsets").get(i).asLong(), frames.header(i).baseOffset());
        roots.add(frames.decode(i, true, allocator));
      }
    }
    int rows = 0;
    for (VectorSchemaRoot root : roots) {
      rows += root.getRowCount();
      root.getVector("value").getObject(0); // still readable after the buffer's close
      root.close();
    }
    assertEquals(6, rows);
  }

  @Test
  void aPayloadThatIsNotARecordBatchIsACorruptFrameAndLeaksNothing() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    BatchHeader h = BatchHeader.read(ByteBuffer.wrap(frame), 0);
    byte[] garbage = new byte[200];
    java.util.Arrays.fill(garbage, (byte) 0x5a);
    try (FrameBuffer frames = FrameBuffer.of(direct(h.encode(garbage)), true, allocator)) {
      FluvioException e = assertThrows(FluvioException.class, () -> frames.decode(0, true, allocator));
      assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
    }
  }

  @Test
  void aDamagedCrcFailsWhenTheBufferIsSplit() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    frame[frame.length - 1] ^= 1;
    FluvioException e =
        assertThrows(FluvioException.class, () -> FrameBuffer.of(direct(frame), true, allocator));
    assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
  }

  @Test
  void aRowCountOtherThanTheHeadersIsACorruptFrame() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    BatchHeader h = BatchHeader.read(ByteBuffer.wrap(frame), 0);
    byte[] payload = java.util.Arrays.copyOfRange(frame, BatchHeader.SIZE, frame.length);
    BatchHeader lying = new BatchHeader(h.baseOffset(), h.recordCount() + 1, h.firstTimestamp(),
        h.maxTimestamp(), 0, 0, h.producerId(), h.sequence(), h.attributes());
    try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.wrap(lying.encode(payload)), true, allocator)) {
      FluvioException e = assertThrows(FluvioException.class, () -> frames.decode(0, true, allocator));
      assertEquals(
          "the payload of %s has %d rows but its header says %d"
            .formatted(lying.frameRange(), h.recordCount(), h.recordCount() + 1),
          e.getMessage());
    }
  }
}

package io.sparkstream.fluvio.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BatchFramesTest {
  private static final JsonNode VECTORS = Vectors.load("batch_frames.json");
  private BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close(); // fails the test if a decoded root leaked
  }

  @Test
  void decodesEveryCompressionToPythonsRecords() {
    List<String> seen = new ArrayList<>();
    for (JsonNode v : VECTORS.get("frames")) {
      List<FrameSlice> frames = BatchFrames.split(ByteBuffer.wrap(Vectors.hex(v.get("bytes"))), true);
      assertEquals(1, frames.size());
      try (VectorSchemaRoot root = BatchFrames.decode(frames.get(0), allocator)) {
        assertRecords(v.get("records"), root);
      }
      seen.add(v.get("compression").asText());
    }
    assertEquals(List.of("none", "lz4", "zstd"), seen);
  }

  @Test
  void splitsALogSliceAtItsRewrittenBaseOffsets() {
    JsonNode log = VECTORS.get("log");
    List<FrameSlice> frames = BatchFrames.split(ByteBuffer.wrap(Vectors.hex(log.get("bytes"))), true);
    assertEquals(3, frames.size());
    int rows = 0;
    for (int i = 0; i < 3; i++) {
      FrameSlice f = frames.get(i);
      assertEquals(log.get("base_offsets").get(i).asLong(), f.header().baseOffset());
      assertEquals(log.get("headers").get(i).get("crc").asLong(), f.header().crc());
      try (VectorSchemaRoot root = BatchFrames.decode(f, allocator)) {
        rows += root.getRowCount();
      }
    }
    assertEquals(6, rows);
  }

  @Test
  void aPayloadThatIsNotARecordBatchIsACorruptFrame() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    BatchHeader h = BatchHeader.read(ByteBuffer.wrap(frame), 0);
    byte[] garbage = new byte[200];
    java.util.Arrays.fill(garbage, (byte) 0x5a);
    byte[] bad = h.encode(garbage); // a valid header and crc around a garbage payload
    FrameSlice slice = BatchFrames.split(ByteBuffer.wrap(bad), true).get(0);
    FluvioException e = assertThrows(FluvioException.class, () -> BatchFrames.decode(slice, allocator));
    assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
  }

  @Test
  void aRowCountOtherThanTheHeadersIsACorruptFrame() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    BatchHeader h = BatchHeader.read(ByteBuffer.wrap(frame), 0);
    byte[] payload = java.util.Arrays.copyOfRange(frame, BatchHeader.SIZE, frame.length);
    BatchHeader lying = new BatchHeader(h.baseOffset(), h.recordCount() + 1, h.firstTimestamp(),
        h.maxTimestamp(), 0, 0, h.producerId(), h.sequence(), h.attributes());
    FrameSlice slice = BatchFrames.split(ByteBuffer.wrap(lying.encode(payload)), true).get(0);
    FluvioException e = assertThrows(FluvioException.class, () -> BatchFrames.decode(slice, allocator));
    assertEquals(
        "the payload of %s has %d rows but its header says %d"
            .formatted(lying.frameRange(), h.recordCount(), h.recordCount() + 1),
        e.getMessage());
  }

  static void assertRecords(JsonNode expected, VectorSchemaRoot root) {
    assertEquals(expected.size(), root.getRowCount());
    VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
    VarBinaryVector values = (VarBinaryVector) root.getVector("value");
    TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector("timestamp");
    ListVector headers = (ListVector) root.getVector("headers");
    StructVector entries = (StructVector) headers.getDataVector();
    VarCharVector hKeys = (VarCharVector) entries.getChild("key");
    VarBinaryVector hValues = (VarBinaryVector) entries.getChild("value");
    for (int i = 0; i < expected.size(); i++) {
      JsonNode r = expected.get(i);
      if (r.get("key").isNull()) {
        assertNull(keys.getObject(i), "key " + i);
      } else {
        assertEquals(r.get("key").asText(), Vectors.hex(keys.get(i)), "key " + i);
      }
      assertEquals(r.get("value").asText(), Vectors.hex(values.get(i)), "value " + i);
      assertEquals(r.get("timestamp_us").asLong(), ts.get(i), "timestamp " + i);
      if (r.get("headers").isNull()) {
        assertEquals(true, headers.isNull(i), "headers " + i);
        continue;
      }
      int start = headers.getOffsetBuffer().getInt((long) i * ListVector.OFFSET_WIDTH);
      int end = headers.getOffsetBuffer().getInt((long) (i + 1) * ListVector.OFFSET_WIDTH);
      assertEquals(r.get("headers").size(), end - start, "header count " + i);
      for (int j = start; j < end; j++) {
        JsonNode pair = r.get("headers").get(j - start);
        assertEquals(pair.get(0).asText(), hKeys.getObject(j).toString());
        assertEquals(pair.get(1).asText(), Vectors.hex(hValues.get(j)));
      }
    }
  }

}

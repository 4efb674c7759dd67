package io.sparkstream.fluvio.records;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.VarCharVector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Java-encoded frames against the frames Python's {@code encode_records} made. */
class FrameEncoderTest {
  private static final JsonNode VECTORS = Vectors.load("batch_frames.json");
  private BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close();
  }

  @Test
  void encodesPythonsHeaderFieldsAndRecordsForEveryCompression() {
    for (JsonNode v : VECTORS.get("frames")) {
      JsonNode h = v.get("header");
      Compression c = Compression.valueOf(v.get("compression").asText().toUpperCase());
      byte[] frame =
          FrameEncoder.encode(
              records(v.get("records")),
              c,
              h.get("producer_id").asLong(),
              h.get("sequence").asInt(),
              allocator);
      BatchHeader got = BatchHeader.verify(ByteBuffer.wrap(frame), 0); // crc checked
      assertEquals(0, got.baseOffset());
      assertEquals(h.get("record_count").asInt(), got.recordCount());
      assertEquals(h.get("sequence").asInt(), got.sequence());
      assertEquals(h.get("producer_id").asLong(), got.producerId());
      assertEquals(h.get("first_timestamp").asLong(), got.firstTimestamp());
      assertEquals(h.get("max_timestamp").asLong(), got.maxTimestamp());
      assertEquals(h.get("attributes").asInt(), got.attributes());
      FrameSlice slice = BatchFrames.split(ByteBuffer.wrap(frame), true).get(0);
      try (VectorSchemaRoot root = BatchFrames.decode(slice, allocator)) {
        assertEquals(v.get("records"), json(root), v.get("name").asText());
      }
    }
  }

  @Test
  void theCrcCoveredHeaderTailIsPythonsByteForByte() {
    // Version, attributes, count, sequence, timestamps and producer id: bytes [20, 56).
    // The Arrow payload differs (Arrow Java writes validity buffers C++ omits; see FrameEncoder).
    JsonNode v = VECTORS.get("frames").get(0);
    byte[] python = Vectors.hex(v.get("bytes"));
    byte[] ours =
        BatchHeader.withBaseOffset(
            FrameEncoder.encode(
                records(v.get("records")),
                Compression.NONE,
                v.get("header").get("producer_id").asLong(),
                v.get("header").get("sequence").asInt(),
                allocator),
            v.get("header").get("base_offset").asLong());
    assertArrayEquals(
        java.util.Arrays.copyOfRange(python, 20, 56), java.util.Arrays.copyOfRange(ours, 20, 56));
  }

  @Test
  void noRecordsIsRefused() {
    assertThrows(
        IllegalArgumentException.class,
        () -> FrameEncoder.encode(List.of(), Compression.NONE, -1, -1, allocator));
  }

  static List<Record> records(JsonNode rows) {
    List<Record> out = new ArrayList<>();
    for (JsonNode r : rows) {
      List<Record.Header> headers = null;
      if (!r.get("headers").isNull()) {
        headers = new ArrayList<>();
        for (JsonNode pair : r.get("headers")) {
          headers.add(new Record.Header(pair.get(0).asText(), Vectors.hex(pair.get(1))));
        }
      }
      out.add(
          new Record(
              r.get("key").isNull() ? null : Vectors.hex(r.get("key")),
              Vectors.hex(r.get("value")),
              r.get("timestamp_us").asLong(),
              headers));
    }
    return out;
  }

  /** The records of a decoded root in the vectors' JSON form. */
  static JsonNode json(VectorSchemaRoot root) {
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    var arr = mapper.createArrayNode();
    VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
    VarBinaryVector values = (VarBinaryVector) root.getVector("value");
    TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector("timestamp");
    ListVector headers = (ListVector) root.getVector("headers");
    StructVector entries = (StructVector) headers.getDataVector();
    VarCharVector hKeys = (VarCharVector) entries.getChild("key");
    VarBinaryVector hValues = (VarBinaryVector) entries.getChild("value");
    for (int i = 0; i < root.getRowCount(); i++) {
      var o = mapper.createObjectNode();
      if (keys.isNull(i)) {
        o.putNull("key");
      } else {
        o.put("key", Vectors.hex(keys.get(i)));
      }
      o.put("value", Vectors.hex(values.get(i)));
      o.put("timestamp_us", ts.get(i));
      if (headers.isNull(i)) {
        o.putNull("headers");
      } else {
        var hs = o.putArray("headers");
        int start = headers.getOffsetBuffer().getInt((long) i * ListVector.OFFSET_WIDTH);
        int end = headers.getOffsetBuffer().getInt((long) (i + 1) * ListVector.OFFSET_WIDTH);
        for (int j = start; j < end; j++) {
          hs.addArray().add(hKeys.getObject(j).toString()).add(Vectors.hex(hValues.get(j)));
        }
      }
      arr.add(o);
    }
    return arr;
  }
}

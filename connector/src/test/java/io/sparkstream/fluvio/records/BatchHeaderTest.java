package io.sparkstream.fluvio.records;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class BatchHeaderTest {
  private static final JsonNode VECTORS = Vectors.load("batch_frames.json");

  static void assertHeader(JsonNode expected, BatchHeader h) {
    assertEquals(expected.get("base_offset").asLong(), h.baseOffset());
    assertEquals(expected.get("payload_length").asLong(), h.payloadLength());
    assertEquals(expected.get("crc").asLong(), h.crc());
    assertEquals(expected.get("attributes").asInt(), h.attributes());
    assertEquals(expected.get("record_count").asInt(), h.recordCount());
    assertEquals(expected.get("sequence").asInt(), h.sequence());
    assertEquals(expected.get("first_timestamp").asLong(), h.firstTimestamp());
    assertEquals(expected.get("max_timestamp").asLong(), h.maxTimestamp());
    assertEquals(expected.get("producer_id").asLong(), h.producerId());
    assertEquals(expected.get("compression").asText(), h.compression().wireName());
  }

  @Test
  void readsEveryFrameHeaderAsPythonDoes() {
    for (JsonNode v : VECTORS.get("frames")) {
      byte[] frame = Vectors.hex(v.get("bytes"));
      BatchHeader h = BatchHeader.verify(ByteBuffer.wrap(frame), 0);
      assertHeader(v.get("header"), h);
      assertEquals(frame.length, h.frameLength());
    }
  }

  @Test
  void encodesTheFrameAroundAPayloadByteForByte() {
    for (JsonNode v : VECTORS.get("frames")) {
      byte[] frame = Vectors.hex(v.get("bytes"));
      BatchHeader h = BatchHeader.read(ByteBuffer.wrap(frame), 0);
      byte[] payload = Arrays.copyOfRange(frame, BatchHeader.SIZE, frame.length);
      BatchHeader zeroed = new BatchHeader(h.baseOffset(), h.recordCount(), h.firstTimestamp(),
          h.maxTimestamp(), 0, 0, h.producerId(), h.sequence(), h.attributes());
      assertArrayEquals(frame, zeroed.encode(payload), v.get("name").asText());
    }
  }

  @Test
  void rewritingTheBaseOffsetKeepsTheCrcValid() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    byte[] moved = BatchHeader.withBaseOffset(frame, 123_456_789L);
    assertEquals(123_456_789L, BatchHeader.verify(ByteBuffer.wrap(moved), 0).baseOffset());
  }

  @Test
  void damagedFramesFailWithPythonsMessages() {
    int checked = 0;
    for (JsonNode v : VECTORS.get("corrupt")) {
      ByteBuffer buf = ByteBuffer.wrap(Vectors.hex(v.get("bytes")));
      FluvioException e = assertThrows(FluvioException.class, () -> BatchHeader.verify(buf, 0),
          v.get("name").asText());
      assertEquals(v.get("error").asText(), e.toString());
      checked++;
    }
    assertEquals(8, checked);
  }
}

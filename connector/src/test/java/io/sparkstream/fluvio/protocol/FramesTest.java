package io.sparkstream.fluvio.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FramesTest {
  private static final JsonNode VECTORS = Vectors.load("protocol_frames.json");

  @SuppressWarnings("unchecked")
  private static Map<String, Object> meta(JsonNode v) {
    return (Map<String, Object>) Vectors.metaValue(v.get("meta"));
  }

  @Test
  void encodesEveryFrameByteForByte() {
    for (JsonNode v : VECTORS.get("frames")) {
      byte[] built =
          Frames.encode(
              FrameKind.valueOf(v.get("kind").asText()),
              v.get("api_key").asInt(),
              v.get("correlation_id").asLong(),
              meta(v),
              ByteBuffer.wrap(Vectors.hex(v.get("tail"))),
              v.get("version").asInt(),
              v.get("flags").asInt());
      assertEquals(v.get("bytes").asText(), Vectors.hex(built), v.get("name").asText());
    }
  }

  @Test
  void decodesEveryFrameFedInSmallPieces() {
    // All frames back to back, fed 7 bytes at a time, as a socket may deliver them.
    List<JsonNode> vectors = new ArrayList<>();
    VECTORS.get("frames").forEach(vectors::add);
    StringBuilder all = new StringBuilder();
    vectors.forEach(v -> all.append(v.get("bytes").asText()));
    byte[] stream = java.util.HexFormat.of().parseHex(all);
    FrameDecoder decoder = new FrameDecoder();
    List<Frame> frames = new ArrayList<>();
    for (int at = 0; at < stream.length; at += 7) {
      decoder.feed(ByteBuffer.wrap(stream, at, Math.min(7, stream.length - at)));
      for (Frame f = decoder.next(); f != null; f = decoder.next()) {
        frames.add(f);
      }
    }
    assertEquals(vectors.size(), frames.size());
    assertEquals(0, decoder.buffered());
    for (int i = 0; i < frames.size(); i++) {
      JsonNode v = vectors.get(i);
      Frame f = frames.get(i);
      String name = v.get("name").asText();
      assertEquals(FrameKind.valueOf(v.get("kind").asText()), f.header().kind(), name);
      assertEquals(v.get("flags").asInt(), f.header().flags(), name);
      assertEquals(v.get("api_key").asInt(), f.header().apiKey(), name);
      assertEquals(v.get("version").asInt(), f.header().version(), name);
      assertEquals(v.get("correlation_id").asLong(), f.header().correlationId(), name);
      assertEquals(v.get("meta_length").asLong(), f.header().metaLength(), name);
      assertEquals(Vectors.comparable(meta(v)), Vectors.comparable(f.decodeMeta()), name);
      byte[] tail = new byte[f.tail().remaining()];
      f.tail().duplicate().get(tail);
      assertEquals(v.get("tail").asText(), Vectors.hex(tail), name);
    }
  }

  @Test
  void damagedHeadersFailWithPythonsMessages() {
    int checked = 0;
    for (JsonNode v : VECTORS.get("corrupt")) {
      ByteBuffer buf = ByteBuffer.wrap(Vectors.hex(v.get("bytes")));
      FluvioException e = assertThrows(FluvioException.class, () -> FrameHeader.parse(buf, 0),
          v.get("name").asText());
      assertEquals(v.get("error").asText(), e.toString());
      checked++;
    }
    assertEquals(7, checked);
  }

  @Test
  void aDecoderFailsForGoodAfterACorruptHeader() {
    JsonNode bad = VECTORS.get("corrupt").get(1); // bad magic
    FrameDecoder decoder = new FrameDecoder();
    decoder.feed(ByteBuffer.wrap(Vectors.hex(bad.get("bytes"))));
    FluvioException first = assertThrows(FluvioException.class, decoder::next);
    assertEquals(ErrorCode.CORRUPT_FRAME, first.code());
    decoder.feed(ByteBuffer.wrap(Vectors.hex(VECTORS.get("frames").get(0).get("bytes"))));
    assertEquals(first, assertThrows(FluvioException.class, decoder::next));
  }

  @Test
  void aFrameOverTheLimitIsRefusedBeforeItsBodyArrives() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(1).get("bytes"));
    FrameDecoder decoder = new FrameDecoder(frame.length - 1);
    decoder.feed(ByteBuffer.wrap(frame, 0, FrameHeader.SIZE));
    FluvioException e = assertThrows(FluvioException.class, decoder::next);
    assertEquals(ErrorCode.RECORD_TOO_LARGE, e.code());
  }

  @Test
  void framesHandedOutKeepTheirBytesWhileMoreArrives() {
    // Frame A is taken, then a large frame B arrives byte by byte (the buffer grows and
    // appends many times): A's meta and tail must still read as they did.
    JsonNode a = VECTORS.get("frames").get(3); // fetch_response, with a tail
    JsonNode b = VECTORS.get("frames").get(4); // produce, with a larger tail
    FrameDecoder decoder = new FrameDecoder();
    decoder.feed(ByteBuffer.wrap(Vectors.hex(a.get("bytes"))));
    Frame first = decoder.next();
    byte[] second = Vectors.hex(b.get("bytes"));
    Frame got = null;
    for (int i = 0; i < second.length && got == null; i++) {
      decoder.feed(ByteBuffer.wrap(second, i, 1));
      got = decoder.next();
    }
    assertNotNull(got);
    byte[] tail = new byte[first.tail().remaining()];
    first.tail().duplicate().get(tail);
    assertEquals(a.get("tail").asText(), Vectors.hex(tail));
    assertEquals(Vectors.comparable(meta(a)), Vectors.comparable(first.decodeMeta()));
    byte[] secondTail = new byte[got.tail().remaining()];
    got.tail().duplicate().get(secondTail);
    assertEquals(b.get("tail").asText(), Vectors.hex(secondTail));
  }

  @Test
  void halfAFrameIsNotAFrameYet() {
    byte[] frame = Vectors.hex(VECTORS.get("frames").get(1).get("bytes"));
    FrameDecoder decoder = new FrameDecoder();
    decoder.feed(ByteBuffer.wrap(frame, 0, frame.length - 1));
    assertNull(decoder.next());
    decoder.feed(ByteBuffer.wrap(frame, frame.length - 1, 1));
    assertNotNull(decoder.next());
  }

  @Test
  void metaRefusesWhatPythonRefuses() {
    FluvioException ext =
        assertThrows(
            FluvioException.class,
            () -> Meta.decode(ByteBuffer.wrap(new byte[] {(byte) 0x81, (byte) 0xa1, 'a', (byte) 0xd4, 5, 0})));
    assertEquals("msgpack extension type 5 is not allowed in meta", ext.getMessage());
    FluvioException notMap =
        assertThrows(FluvioException.class, () -> Meta.decode(ByteBuffer.wrap(new byte[] {(byte) 0x90})));
    assertEquals(ErrorCode.INVALID_REQUEST, notMap.code());
    FluvioException intKey =
        assertThrows(FluvioException.class, () -> Meta.decode(ByteBuffer.wrap(new byte[] {(byte) 0x81, 1, 2})));
    assertEquals("meta keys must be strings, got 1", intKey.getMessage());
    assertEquals(Map.of(), Meta.decode(ByteBuffer.allocate(0)));
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProducerIdsTest {
  @Test
  void idsEqualPython() {
    JsonNode vectors = Vectors.load("producer_ids.json");
    assertEquals(ProducerIds.MAX_PRODUCER_ID, vectors.get("max_producer_id").asLong());
    for (JsonNode v : vectors.get("ids")) {
      List<Object> parts = new ArrayList<>();
      for (JsonNode p : v.get("parts")) {
        parts.add(p.isIntegralNumber() ? (Object) p.asLong() : p.asText());
      }
      assertEquals(v.get("id").asLong(), ProducerIds.producerIdFor(parts.toArray()), v.toString());
    }
  }

  @Test
  void blake2bMatchesTheRfcVector() {
    // RFC 7693 appendix A: BLAKE2b-512("abc").
    byte[] abc = "abc".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    assertEquals(
        "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
            + "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923",
        Vectors.hex(Blake2b.digest(abc, 64)));
  }

  @Test
  void noPartsIsAnInvalidConfig() {
    FluvioException e = assertThrows(FluvioException.class, ProducerIds::producerIdFor);
    assertEquals(ErrorCode.INVALID_CONFIG, e.code());
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import org.junit.jupiter.api.Test;

/** Endpoint lists and the active SC a standby names ({@code spark_stream/net/sc_endpoints.py}). */
class EndpointTest {
  @Test
  void theFirstOfAListIsUsedAndEveryEntryIsChecked() {
    assertEquals(new Endpoint("a", 1), Endpoint.list("a:1", "x"));
    assertEquals(new Endpoint("::1", 2, null, java.util.List.of(new Endpoint("b", 3))), Endpoint.list(" [::1]:2 , b:3, b:3", "x"));
    FluvioException bad = assertThrows(FluvioException.class, () -> Endpoint.list("a:1,b", "FLUVIO_ENDPOINT"));
    assertEquals(ErrorCode.INVALID_CONFIG, bad.code());
    assertThrows(FluvioException.class, () -> Endpoint.list(" , ", "x"));
    assertEquals("[::1]:2,b:3", Endpoint.list(" [::1]:2 , b:3", "x").listed());
    assertEquals("a:1", Endpoint.list("a:1", "x").listed());
  }

  @Test
  void aStandbysAnswerNamesTheActiveScsPublicEndpoint() {
    // The message of spark_stream.net.sc_endpoints.not_active.
    FluvioException standby = new FluvioException(
        ErrorCode.NOT_ACTIVE,
        "this SC is a standby; active SC: public=127.0.0.1:9003 private=127.0.0.1:9004");
    assertEquals(new Endpoint("127.0.0.1", 9003), Endpoint.activeSc(standby));
    assertNull(Endpoint.activeSc(new FluvioException(ErrorCode.NOT_ACTIVE, "no active SC is known yet")));
    assertNull(Endpoint.activeSc(new FluvioException(
        ErrorCode.NOT_LEADER, "active SC: public=127.0.0.1:9003 private=127.0.0.1:9004")));
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The SC address walk ({@code ScEndpoints} of {@code spark_stream/net/sc_endpoints.py}). */
class ScEndpointsTest {
  private static FluvioException refused(Endpoint at) {
    return new FluvioException(ErrorCode.CONNECTION_CLOSED, "cannot connect to " + at);
  }

  @Test
  void aDeadFirstAddressMovesOnToTheNextWhichStaysCurrent() {
    ScEndpoints sc = new ScEndpoints(Endpoint.list("a:1,b:2", "x"));
    List<String> tried = new ArrayList<>();
    String got = sc.call(at -> {
      tried.add(at.toString());
      if (at.port() == 1) {
        throw refused(at);
      }
      return "answer from " + at;
    });
    assertEquals("answer from b:2", got);
    assertEquals(List.of("a:1", "b:2"), tried);
    assertEquals(new Endpoint("b", 2), sc.current());
  }

  @Test
  void aTimeoutIsUnansweredToo() {
    ScEndpoints sc = new ScEndpoints(Endpoint.list("a:1,b:2", "x"));
    assertEquals(2, (int) sc.call(at -> {
      if (at.port() == 1) {
        throw new FluvioException(ErrorCode.REQUEST_TIMEOUT, "no reply");
      }
      return at.port();
    }));
  }

  @Test
  void aStandbysAnswerLeadsToTheActiveScItNames() {
    ScEndpoints sc = new ScEndpoints(Endpoint.list("a:1,b:2", "x"));
    Map<Integer, String> replies = Map.of(1, "standby", 9003, "active");
    String got = sc.call(at -> {
      if (replies.get(at.port()) == null) {
        throw refused(at);
      }
      if (at.port() == 1) {
        throw new FluvioException(
            ErrorCode.NOT_ACTIVE, "this SC is a standby; active SC: public=c:9003 private=c:9004");
      }
      return replies.get(at.port());
    });
    assertEquals("active", got);
    assertEquals(List.of(new Endpoint("a", 1), new Endpoint("b", 2), new Endpoint("c", 9003)), sc.all());
    assertEquals(new Endpoint("c", 9003), sc.current());
  }

  @Test
  void noAnswerNamesEveryAddressTried() {
    ScEndpoints sc = new ScEndpoints(Endpoint.list("a:1,b:2", "x"));
    FluvioException e = assertThrows(FluvioException.class, () -> sc.call(at -> {
      throw refused(at);
    }));
    assertEquals(ErrorCode.CONNECTION_CLOSED, e.code());
    assertTrue(e.getMessage().contains("a:1 (cannot connect to a:1)"), e.getMessage());
    assertTrue(e.getMessage().contains("b:2 (cannot connect to b:2)"), e.getMessage());
  }

  @Test
  void aSingleAddressThrowsItsOwnErrorAndAnAnsweringScsErrorIsThrownAsItIs() {
    FluvioException own = refused(new Endpoint("a", 1));
    FluvioException thrown = assertThrows(
        FluvioException.class, () -> new ScEndpoints(new Endpoint("a", 1)).call(at -> {
          throw own;
        }));
    assertSame(own, thrown);
    List<String> tried = new ArrayList<>();
    FluvioException unknown = assertThrows(
        FluvioException.class, () -> new ScEndpoints(Endpoint.list("a:1,b:2", "x")).call(at -> {
          tried.add(at.toString());
          throw new FluvioException(ErrorCode.UNKNOWN_TOPIC, "no topic t");
        }));
    assertEquals(ErrorCode.UNKNOWN_TOPIC, unknown.code());
    assertEquals(List.of("a:1"), tried);
  }

  @Test
  void theOthersKeepTheTlsOfTheList() {
    Endpoint listed = Endpoint.list("a:1, b:2", "x");
    assertEquals(List.of(new Endpoint("a", 1), new Endpoint("b", 2)), listed.addresses());
    assertEquals(List.of(new Endpoint("b", 2)), listed.withTls(null).others());
  }
}

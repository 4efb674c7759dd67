package io.sparkstream.fluvio.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ErrorCodeTest {
  @Test
  void tableEqualsThePythonErrors() {
    List<String> python = new ArrayList<>();
    for (JsonNode e : Vectors.load("error_codes.json").get("errors")) {
      python.add(e.get("code").asInt() + " " + e.get("name").asText() + " " + e.get("retriable"));
    }
    List<String> java = new ArrayList<>();
    for (ErrorCode c : ErrorCode.values()) {
      java.add(c.code() + " " + c.pythonName() + " " + c.retriable());
    }
    assertEquals(python, java);
  }

  @Test
  void unknownCodeIsTheRootErrorAndMessagesReadAsInPython() {
    FluvioException e = FluvioException.forCode(999, "odd");
    assertEquals(ErrorCode.FLUVIO, e.code());
    assertEquals("NotLeaderError: spu 2", FluvioException.forCode(10, "spu 2").toString());
    assertEquals(true, FluvioException.forCode(10, "").retriable());
  }
}

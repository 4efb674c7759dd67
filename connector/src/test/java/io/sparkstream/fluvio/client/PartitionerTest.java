package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import org.junit.jupiter.api.Test;

class PartitionerTest {
  @Test
  void fnv1aEqualsPython() {
    int checked = 0;
    for (JsonNode v : Vectors.load("key_hashes.json").get("fnv1a_32")) {
      assertEquals(v.get("hash").asLong(), Partitioner.fnv1a32(Vectors.hex(v.get("key"))), v.toString());
      checked++;
    }
    assertTrue(checked >= 5);
  }

  @Test
  void nullKeyHashesAsEmptyAndPartitionIsTheRemainder() {
    assertEquals(Partitioner.fnv1a32(new byte[0]), Partitioner.fnv1a32(null));
    byte[] key = "key-1".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(Partitioner.fnv1a32(key) % 7, Partitioner.partitionFor(key, 7));
  }
}

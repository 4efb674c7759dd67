package io.sparkstream.fluvio.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The manifest as the SPU writes it parses to the entries Python has, and {@code tierStart}
 * and {@code covering} plan exactly what {@code spark_stream.tier.plan} plans, errors and
 * messages included ({@code tier_manifests.json}).
 */
class TierManifestTest {
  private static final JsonNode VECTORS = Vectors.load("tier_manifests.json");

  @Test
  void parsesTheManifestPythonWrites() {
    TierManifest manifest = TierManifest.parse(VECTORS.get("manifest").asText(), "m");
    assertEquals(3, manifest.partition());
    assertEquals(4, manifest.files().size());
    assertEquals(VECTORS.get("start_offset").longValue(), manifest.startOffset());
    assertEquals(VECTORS.get("end_offset").longValue(), manifest.endOffset());
    TierEntry first = manifest.files().get(0);
    assertEquals(new TierEntry(100, 125, 25, 1100, "partition=3/00000000000000000100.parquet", 1764000000000100L), first);
  }

  @Test
  void tierStartsAsPython() {
    check(TierManifest.parse(VECTORS.get("manifest").asText(), "m"), VECTORS);
    check(TierManifest.parse(VECTORS.get("empty").get("manifest").asText(), "m"), VECTORS.get("empty"));
  }

  private static void check(TierManifest manifest, JsonNode cases) {
    for (JsonNode c : cases.get("tier_starts")) {
      assertEquals(c.get("tier_start").longValue(), manifest.tierStart(c.get("log_start").longValue()), c.toString());
    }
    for (JsonNode c : cases.get("plans")) {
      long start = c.get("start").longValue();
      long end = c.get("end").longValue();
      if (c.has("error")) {
        FluvioException e = assertThrows(FluvioException.class, () -> manifest.covering(start, end), c.toString());
        assertEquals(c.get("error").asText(), e.code().pythonName(), c.toString());
        assertEquals(c.get("message").asText(), e.getMessage(), c.toString());
      } else {
        List<String> files = new ArrayList<>();
        c.get("files").forEach(f -> files.add(f.asText()));
        assertEquals(files, manifest.covering(start, end).stream().map(TierEntry::file).toList(), c.toString());
      }
    }
  }

  @Test
  void refusesWhatIsNotAManifest() {
    for (JsonNode text : VECTORS.get("invalid")) {
      FluvioException e =
          assertThrows(FluvioException.class, () -> TierManifest.parse(text.asText(), "file:/t/_fluvio/partition=0.json"), text.asText());
      assertEquals(ErrorCode.STORAGE, e.code());
      assertTrue(e.getMessage().startsWith("file:/t/_fluvio/partition=0.json is not a valid tier manifest: "), e.getMessage());
    }
  }
}

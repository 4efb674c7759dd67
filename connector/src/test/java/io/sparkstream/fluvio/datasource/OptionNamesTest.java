package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.client.Isolation;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Kafka's aliases, the nearest-name suggestion (the same table as {@code
 * tests/datasource/test_option_names.py}), the isolation words and the trigger wait.
 */
class OptionNamesTest {
  private static List<String> readerNames() {
    List<String> names = new ArrayList<>(ReaderOptions.READER);
    names.addAll(OptionNames.READER_ALIASES.keySet());
    return names;
  }

  @Test
  void suggestsTheNearestNameAsDifflibDoes() {
    String[][] table = {
      {"startingOffset", "startingOffsets"},
      {"STARTINGOFFSETS2", "startingOffsets"},
      {"topicz", "topic"},
      {"partition", "partitions"},
      {"subscribepattern", "subscribePattern"},
      {"kafka.isolation", "kafka.isolation.level"},
      {"isolatoin", "isolation"},
      {"endingTimestamps", "endingTimestamp"},
      {"maxTriggerDelays", "maxTriggerDelay"},
      {"offsets", "endingOffsets"},
      {"kafka.group.id", null},
      {"x", null},
      {"abcd", null},
    };
    for (String[] row : table) {
      assertEquals(row[1], OptionNames.suggest(row[0], readerNames()), row[0]);
    }
  }

  @Test
  void aTieGoesToTheNameThatSortsLast() {
    assertEquals("tix", OptionNames.suggest("tie", List.of("tia", "tix")));
    assertEquals("ab2", OptionNames.suggest("ab", List.of("ba", "ab2", "a")));
  }

  @Test
  void ratioIsDifflibs() {
    assertEquals(0.75, OptionNames.ratio("abcd", "bcda"));
    assertEquals(0.5, OptionNames.ratio("aaab", "abab"));
    assertEquals(0.5, OptionNames.ratio("ab", "ba"));
    assertEquals(0.8333333333333334, OptionNames.ratio("topics", "topicz"));
    assertEquals(1.0, OptionNames.ratio("", ""));
  }

  @Test
  void anAliasIsKeptUnderItsCanonicalNameWithItsSpelling() {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("SUBSCRIBE", "a,b");
    options.put("kafka.bootstrap.servers", "h:1");
    OptionNames.Given given = OptionNames.canonical(options, ReaderOptions.READER, OptionNames.READER_ALIASES);
    assertEquals("a,b", given.values().get("topics"));
    assertEquals("subscribe", given.name("topics"));
    assertEquals("kafka.bootstrap.servers", given.name("endpoint"));
    assertEquals("isolation", given.name("isolation"));
  }

  @Test
  void twoSpellingsWithDifferentValuesNameBoth() {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("subscribe", "a");
    options.put("topics", "b");
    FluvioException e = assertThrows(FluvioException.class,
        () -> OptionNames.canonical(options, ReaderOptions.READER, OptionNames.READER_ALIASES));
    assertEquals("options 'topics' and 'subscribe' name one option with different values: give one", e.getMessage());
  }

  @Test
  void isolationWordsAreTheClientsTable() {
    assertEquals(List.of("read_committed", "read_uncommitted", "committed", "uncommitted"),
        new ArrayList<>(Isolation.WORDS.keySet()));
    assertEquals(Isolation.UNCOMMITTED, Isolation.parse(" Read-Uncommitted"));
    assertEquals(Isolation.COMMITTED, Isolation.parse("READ_COMMITTED"));
    assertNull(Isolation.parse("dirty"));
  }

  @Test
  void aTriggerWaitsForTheMinimumUntilTheDelayPassed() {
    // (minRows, newRows, nowMs, lastMs, maxDelayMs) -> waits
    assertFalse(StreamLimits.delayBatch(5, 0, 1_000_000, 0, 60_000)); // first trigger
    assertTrue(StreamLimits.delayBatch(5, 4, 1_000, 500, 60_000));
    assertFalse(StreamLimits.delayBatch(5, 5, 1_000, 500, 60_000));
    assertFalse(StreamLimits.delayBatch(5, 0, 61_000, 1_000, 60_000)); // the delay passed
    assertTrue(StreamLimits.delayBatch(5, 0, 60_999, 1_000, 60_000));
  }
}

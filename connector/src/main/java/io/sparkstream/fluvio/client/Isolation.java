package io.sparkstream.fluvio.client;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Which records a read sees: committed (up to the HW) or uncommitted (up to the LEO). */
public enum Isolation {
  COMMITTED,
  UNCOMMITTED;

  /**
   * The words for an isolation, Kafka's first ({@code isolation.level}), then the project's
   * older short forms: {@code ISOLATION_WORDS} of {@code spark_stream/client/config.py}.
   */
  public static final Map<String, Isolation> WORDS = words();

  private static Map<String, Isolation> words() {
    Map<String, Isolation> out = new LinkedHashMap<>();
    out.put("read_committed", COMMITTED);
    out.put("read_uncommitted", UNCOMMITTED);
    out.put("committed", COMMITTED);
    out.put("uncommitted", UNCOMMITTED);
    return java.util.Collections.unmodifiableMap(out);
  }

  /** The wire value ({@code committed} / {@code uncommitted}). */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * A word of {@link #WORDS} (any case, {@code -} for {@code _}), as {@code parse_isolation}.
   *
   * @param word the word given
   * @return the isolation, or null for anything else
   */
  public static Isolation parse(String word) {
    return WORDS.get(word.strip().toLowerCase(Locale.ROOT).replace('-', '_'));
  }
}

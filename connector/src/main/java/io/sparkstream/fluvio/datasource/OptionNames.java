package io.sparkstream.fluvio.datasource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * The names of {@code format("fluvio")}'s options, as {@code datasource/option_names.py}:
 * canonical names, Spark's Kafka names as aliases ({@code subscribe} for {@code topics}),
 * and the check that turns Spark's case-insensitive map into one value per canonical name,
 * remembering the spelling the user gave for messages. Both spellings of one option with
 * different values are an error naming both; an unknown name fails with the nearest known
 * one, chosen as Python's {@code difflib.get_close_matches(key, names, n=1, cutoff=0.6)}
 * chooses it (the same Ratcliff/Obershelp ratio, computed here). Pure.
 */
final class OptionNames {
  private OptionNames() {}

  /** Spark's Kafka source names a read accepts (alias -> canonical), as Python's {@code READER_ALIASES}. */
  static final Map<String, String> READER_ALIASES = ordered(
      "subscribe", "topics",
      "subscribePattern", "topicPattern",
      "kafka.bootstrap.servers", "endpoint",
      "kafka.isolation.level", "isolation");

  /** Spark's Kafka sink names a write accepts (alias -> canonical). */
  static final Map<String, String> WRITER_ALIASES = ordered("kafka.bootstrap.servers", "endpoint");

  private static final List<String> SPARK_OWNED = List.of("checkpointlocation");
  private static final double CUTOFF = 0.6;

  /**
   * Options by canonical name and the name each was given with.
   *
   * @param values canonical name -> value
   * @param spelled canonical name -> the name given (canonical or alias, in its canonical case)
   */
  record Given(Map<String, String> values, Map<String, String> spelled) {
    /** The name the user gave for {@code canonical} ({@code canonical} when absent). */
    String name(String canonical) {
      return spelled.getOrDefault(canonical, canonical);
    }
  }

  private static Map<String, String> ordered(String... pairs) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      out.put(pairs[i], pairs[i + 1]);
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  /**
   * Map option keys (any case) to canonical names; reject unknown and clashing ones.
   *
   * @param options the options as Spark passes them
   * @param known the canonical names
   * @param aliases alias -> canonical name
   * @return the options by canonical name
   * @throws io.sparkstream.fluvio.errors.FluvioException {@code DATA_SOURCE_OPTION}
   */
  static Given canonical(Map<String, String> options, List<String> known, Map<String, String> aliases) {
    Map<String, String[]> byLower = new HashMap<>();
    known.forEach(n -> byLower.put(n.toLowerCase(Locale.ROOT), new String[] {n, n}));
    aliases.forEach((alias, name) -> byLower.put(alias.toLowerCase(Locale.ROOT), new String[] {name, alias}));
    Map<String, String> values = new LinkedHashMap<>();
    Map<String, String> spelled = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      String key = e.getKey();
      String[] found = byLower.get(key.toLowerCase(Locale.ROOT));
      if (found == null) {
        if (SPARK_OWNED.contains(key.toLowerCase(Locale.ROOT))) {
          continue;
        }
        List<String> names = new ArrayList<>(known);
        names.addAll(aliases.keySet());
        throw ReaderOptions.error(unknown(key, names));
      }
      String name = found[0];
      String given = found[1];
      String value = String.valueOf(e.getValue());
      if (values.containsKey(name) && !values.get(name).equals(value)) {
        String other = spelled.get(name);
        String first = other.equals(name) ? other : given;
        String second = other.equals(name) ? given : other;
        throw ReaderOptions.error(
            "options '%s' and '%s' name one option with different values: give one".formatted(first, second));
      }
      if (!values.containsKey(name) || given.equals(name)) {
        spelled.put(name, given);
      }
      values.put(name, value);
    }
    return new Given(values, spelled);
  }

  private static String unknown(String key, List<String> names) {
    String hint = key.equalsIgnoreCase("path") ? " (name the topic with option('topic', ...))" : "";
    String near = hint.isEmpty() ? suggest(key, names) : null;
    if (near != null) {
      return "unknown option '%s' for format('fluvio'); did you mean '%s'?".formatted(key, near);
    }
    return "unknown option '%s' for format('fluvio')%s; known options: %s"
        .formatted(key, hint, String.join(", ", new TreeSet<>(names)));
  }

  /**
   * The known name nearest to {@code key} (case ignored), or null when none is near: the
   * best ratio of at least 0.6, a tie going to the name whose lower case sorts last (as
   * Python's {@code heapq.nlargest} picks among {@code (score, name)} pairs).
   *
   * @param key the name given
   * @param names the known names
   * @return the nearest name in its canonical spelling, or null
   */
  static String suggest(String key, List<String> names) {
    String word = key.toLowerCase(Locale.ROOT);
    String best = null;
    String bestLower = null;
    double bestScore = -1;
    for (String name : names) {
      String lower = name.toLowerCase(Locale.ROOT);
      double score = ratio(lower, word);
      if (score < CUTOFF) {
        continue;
      }
      if (score > bestScore || (score == bestScore && lower.compareTo(bestLower) > 0)) {
        best = name;
        bestLower = lower;
        bestScore = score;
      }
    }
    return best;
  }

  /**
   * Python's {@code SequenceMatcher(None, a, b).ratio()}: twice the characters of the
   * matching blocks over the total length.
   */
  static double ratio(String a, String b) {
    int total = a.length() + b.length();
    return total == 0 ? 1.0 : 2.0 * matched(a, b) / total;
  }

  private static int matched(String a, String b) {
    Map<Character, List<Integer>> b2j = new HashMap<>();
    for (int j = 0; j < b.length(); j++) {
      b2j.computeIfAbsent(b.charAt(j), c -> new ArrayList<>()).add(j);
    }
    if (b.length() >= 200) { // difflib's autojunk: drop characters that are too common
      int limit = b.length() / 100 + 1;
      b2j.values().removeIf(js -> js.size() > limit);
    }
    int sum = 0;
    List<int[]> queue = new ArrayList<>();
    queue.add(new int[] {0, a.length(), 0, b.length()});
    while (!queue.isEmpty()) {
      int[] q = queue.remove(queue.size() - 1);
      int[] m = longest(a, b, b2j, q[0], q[1], q[2], q[3]);
      int i = m[0];
      int j = m[1];
      int k = m[2];
      if (k > 0) {
        sum += k;
        if (q[0] < i && q[2] < j) {
          queue.add(new int[] {q[0], i, q[2], j});
        }
        if (i + k < q[1] && j + k < q[3]) {
          queue.add(new int[] {i + k, q[1], j + k, q[3]});
        }
      }
    }
    return sum;
  }

  /** {@code find_longest_match} of difflib without junk: {i, j, size}. */
  private static int[] longest(
      String a, String b, Map<Character, List<Integer>> b2j, int alo, int ahi, int blo, int bhi) {
    int besti = alo;
    int bestj = blo;
    int bestsize = 0;
    Map<Integer, Integer> j2len = new HashMap<>();
    for (int i = alo; i < ahi; i++) {
      Map<Integer, Integer> next = new HashMap<>();
      for (int j : b2j.getOrDefault(a.charAt(i), List.of())) {
        if (j < blo) {
          continue;
        }
        if (j >= bhi) {
          break;
        }
        int k = j2len.getOrDefault(j - 1, 0) + 1;
        next.put(j, k);
        if (k > bestsize) {
          besti = i - k + 1;
          bestj = j - k + 1;
          bestsize = k;
        }
      }
      j2len = next;
    }
    while (besti > alo && bestj > blo && a.charAt(besti - 1) == b.charAt(bestj - 1)) {
      besti--;
      bestj--;
      bestsize++;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi
        && a.charAt(besti + bestsize) == b.charAt(bestj + bestsize)) {
      bestsize++;
    }
    return new int[] {besti, bestj, bestsize};
  }
}

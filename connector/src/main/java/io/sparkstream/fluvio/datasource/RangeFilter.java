package io.sparkstream.fluvio.datasource;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;

/**
 * Predicates on {@code partition}, {@code offset} and {@code timestamp} turned into the
 * ranges a batch read plans, so a filtered query fetches only the frames it needs. Pure:
 * planning applies the result (and asks leaders for the offset of a time).
 *
 * <p>What is pushed, and whether Spark still evaluates it:
 *
 * <ul>
 *   <li>{@code partition} with {@code = <=> < <= > >=} and {@code IN}: exact (the plan
 *       reads only those partitions), not evaluated again;
 *   <li>{@code offset} with {@code = <=> < <= > >=}: exact (the reader trims frames to the
 *       range), not evaluated again;
 *   <li>{@code timestamp} with {@code = <=> >= >}: a lower bound, resolved like {@code
 *       startingTimestamp} to the first offset whose timestamp is at least the bound (every
 *       record before it is older). Records after it may still be older (timestamps are
 *       the producers'), so Spark evaluates these again;
 *   <li>{@code AND} of pushable predicates; anything else is left to Spark alone.
 * </ul>
 *
 * @param partitionFrom first partition read
 * @param partitionTo partition after the last one read
 * @param partitionIn the partitions an {@code IN} or {@code =} names, null for any
 * @param offsetFrom first offset read
 * @param offsetTo offset after the last one read
 * @param timestampFromUs records before the first one at least this new are skipped
 *     (microseconds since the epoch), null for no bound
 */
record RangeFilter(
    int partitionFrom,
    int partitionTo,
    Set<Integer> partitionIn,
    long offsetFrom,
    long offsetTo,
    Long timestampFromUs) {

  /** No restriction. */
  static final RangeFilter ALL = new RangeFilter(0, Integer.MAX_VALUE, null, 0, Long.MAX_VALUE, null);

  /**
   * What {@code pushPredicates} makes of Spark's predicates.
   *
   * @param filter the ranges, the conjunction of every pushed predicate
   * @param pushed the predicates turned into ranges
   * @param residual the predicates Spark must still evaluate after the scan
   */
  record Split(RangeFilter filter, List<Predicate> pushed, List<Predicate> residual) {}

  /**
   * Split Spark's predicates (a conjunction) into ranges and what Spark keeps.
   *
   * @param predicates the predicates Spark offers
   * @return the ranges and both lists
   */
  static Split split(Predicate[] predicates) {
    RangeFilter filter = ALL;
    List<Predicate> pushed = new ArrayList<>();
    List<Predicate> residual = new ArrayList<>();
    for (Predicate p : predicates) {
      Translated t = translate(p);
      if (t == null) {
        residual.add(p);
        continue;
      }
      filter = filter.and(t.filter);
      pushed.add(p);
      if (!t.exact) {
        residual.add(p);
      }
    }
    return new Split(filter, pushed, residual);
  }

  /** True when partition {@code p} is read. */
  boolean readsPartition(int p) {
    return p >= partitionFrom && p < partitionTo && (partitionIn == null || partitionIn.contains(p));
  }

  /** Both restrictions at once. */
  RangeFilter and(RangeFilter o) {
    Set<Integer> in = partitionIn;
    if (o.partitionIn != null) {
      in = new TreeSet<>(o.partitionIn);
      if (partitionIn != null) {
        in.retainAll(partitionIn);
      }
    }
    Long ts = timestampFromUs;
    if (o.timestampFromUs != null) {
      ts = ts == null ? o.timestampFromUs : Math.max(ts, o.timestampFromUs);
    }
    return new RangeFilter(
        Math.max(partitionFrom, o.partitionFrom), Math.min(partitionTo, o.partitionTo), in,
        Math.max(offsetFrom, o.offsetFrom), Math.min(offsetTo, o.offsetTo), ts);
  }

  /** A predicate's ranges, and whether they are exactly the predicate. */
  private record Translated(RangeFilter filter, boolean exact) {}

  private static Translated translate(Predicate p) {
    Expression[] c = p.children();
    switch (p.name()) {
      case "AND" -> {
        Translated a = c[0] instanceof Predicate l ? translate(l) : null;
        Translated b = c[1] instanceof Predicate r ? translate(r) : null;
        return a == null || b == null ? null : new Translated(a.filter.and(b.filter), a.exact && b.exact);
      }
      case "IN" -> {
        if (c.length < 1 || !"partition".equals(column(c[0]))) {
          return null;
        }
        Set<Integer> in = new TreeSet<>();
        for (int i = 1; i < c.length; i++) {
          Long v = number(c[i]);
          if (v == null) {
            return null;
          }
          if (v >= 0 && v <= Integer.MAX_VALUE) {
            in.add(v.intValue());
          }
        }
        return new Translated(new RangeFilter(0, Integer.MAX_VALUE, in, 0, Long.MAX_VALUE, null), true);
      }
      case "=", "<=>", "<", "<=", ">", ">=" -> {
        if (c.length != 2) {
          return null;
        }
        String op = p.name();
        String col = column(c[0]);
        Long v = number(c[1]);
        if (col == null) { // literal first: flip the comparison
          col = column(c[1]);
          v = number(c[0]);
          op = flipped(op);
        }
        return col == null || v == null ? null : compare(col, op, v);
      }
      default -> {
        return null;
      }
    }
  }

  private static Translated compare(String col, String op, long v) {
    long[] range = bounds(op, v); // [from, to) of the values the comparison keeps
    switch (col) {
      case "partition" -> {
        int from = (int) Math.max(0, Math.min(range[0], Integer.MAX_VALUE));
        int to = (int) Math.max(0, Math.min(range[1], Integer.MAX_VALUE));
        return new Translated(new RangeFilter(from, to, null, 0, Long.MAX_VALUE, null), true);
      }
      case "offset" -> {
        return new Translated(
            new RangeFilter(0, Integer.MAX_VALUE, null, Math.max(0, range[0]), Math.max(0, range[1]), null), true);
      }
      case "timestamp" -> {
        if (range[1] != Long.MAX_VALUE) {
          return null; // an upper bound on producers' times does not bound offsets
        }
        return new Translated(new RangeFilter(0, Integer.MAX_VALUE, null, 0, Long.MAX_VALUE, range[0]), false);
      }
      default -> {
        return null;
      }
    }
  }

  private static long[] bounds(String op, long v) {
    long next = v == Long.MAX_VALUE ? v : v + 1;
    return switch (op) {
      case "=", "<=>" -> new long[] {v, next};
      case "<" -> new long[] {Long.MIN_VALUE, v};
      case "<=" -> new long[] {Long.MIN_VALUE, next};
      case ">" -> new long[] {next, Long.MAX_VALUE};
      default -> new long[] {v, Long.MAX_VALUE}; // >=
    };
  }

  private static String flipped(String op) {
    return switch (op) {
      case "<" -> ">";
      case "<=" -> ">=";
      case ">" -> "<";
      case ">=" -> "<=";
      default -> op;
    };
  }

  private static String column(Expression e) {
    if (e instanceof NamedReference ref && ref.fieldNames().length == 1) {
      return ref.fieldNames()[0];
    }
    return null;
  }

  private static Long number(Expression e) {
    if (e instanceof Literal<?> lit && (lit.value() instanceof Integer || lit.value() instanceof Long)) {
      return ((Number) lit.value()).longValue();
    }
    return null;
  }
}

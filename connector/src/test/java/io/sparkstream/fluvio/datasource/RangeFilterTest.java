package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.junit.jupiter.api.Test;

class RangeFilterTest {
  private static Predicate cmp(String op, String col, Object value) {
    return new Predicate(op, new Expression[] {Expressions.column(col), Expressions.literal(value)});
  }

  private static Predicate flippedCmp(String op, Object value, String col) {
    return new Predicate(op, new Expression[] {Expressions.literal(value), Expressions.column(col)});
  }

  private static RangeFilter filterOf(Predicate... ps) {
    RangeFilter.Split split = RangeFilter.split(ps);
    assertEquals(ps.length, split.pushed().size() + split.residual().size() - residualTimestamps(split));
    return split.filter();
  }

  private static int residualTimestamps(RangeFilter.Split split) {
    return (int) split.residual().stream().filter(split.pushed()::contains).count();
  }

  @Test
  void offsetComparisonsBecomeExactRanges() {
    // one row per comparison: predicate -> [offsetFrom, offsetTo)
    Object[][] table = {
      {cmp("=", "offset", 5L), 5L, 6L},
      {cmp("<=>", "offset", 5L), 5L, 6L},
      {cmp("<", "offset", 5L), 0L, 5L},
      {cmp("<=", "offset", 5L), 0L, 6L},
      {cmp(">", "offset", 5L), 6L, Long.MAX_VALUE},
      {cmp(">=", "offset", 5L), 5L, Long.MAX_VALUE},
      {flippedCmp("<", 5L, "offset"), 6L, Long.MAX_VALUE},
      {flippedCmp(">=", 5L, "offset"), 0L, 6L},
      {cmp("<", "offset", -3L), 0L, 0L},
    };
    for (Object[] row : table) {
      Predicate p = (Predicate) row[0];
      RangeFilter.Split split = RangeFilter.split(new Predicate[] {p});
      assertEquals(List.of(p), split.pushed(), p.toString());
      assertEquals(List.of(), split.residual(), p.toString());
      assertEquals(row[1], split.filter().offsetFrom(), p.toString());
      assertEquals(row[2], split.filter().offsetTo(), p.toString());
    }
  }

  @Test
  void partitionPredicatesSelectPartitions() {
    Predicate in =
        new Predicate("IN", new Expression[] {
          Expressions.column("partition"), Expressions.literal(1), Expressions.literal(3), Expressions.literal(7)});
    RangeFilter f = filterOf(in, cmp("<", "partition", 5));
    assertEquals(List.of(false, true, false, true, false, false, false, false),
        java.util.stream.IntStream.range(0, 8).mapToObj(f::readsPartition).toList());
    assertEquals(Set.of(1, 3, 7), f.partitionIn());
    RangeFilter eq = filterOf(cmp("=", "partition", 2));
    assertEquals(List.of(false, false, true, false),
        java.util.stream.IntStream.range(0, 4).mapToObj(eq::readsPartition).toList());
  }

  @Test
  void conjunctionsNarrowAndAndsArePushedWhole() {
    Predicate and = new Predicate("AND", new Expression[] {cmp(">=", "offset", 10L), cmp("<", "offset", 20L)});
    RangeFilter f = filterOf(and, cmp(">", "offset", 12L));
    assertEquals(13L, f.offsetFrom());
    assertEquals(20L, f.offsetTo());
  }

  @Test
  void timestampLowerBoundsArePushedAndKeptForSpark() {
    Predicate ge = cmp(">=", "timestamp", 1_000_000L);
    Predicate gt = cmp(">", "timestamp", 2_000_000L);
    RangeFilter.Split split = RangeFilter.split(new Predicate[] {ge, gt});
    assertEquals(List.of(ge, gt), split.pushed());
    assertEquals(List.of(ge, gt), split.residual());
    assertEquals(2_000_001L, split.filter().timestampFromUs());
  }

  @Test
  void whatCannotBecomeARangeIsLeftToSpark() {
    Predicate upper = cmp("<", "timestamp", 5L);
    Predicate value = cmp("=", "value", 5L);
    Predicate or = new Predicate("OR", new Expression[] {cmp("=", "offset", 1L), cmp("=", "offset", 2L)});
    Predicate offsetIn =
        new Predicate("IN", new Expression[] {Expressions.column("offset"), Expressions.literal(1L)});
    Predicate halfAnd = new Predicate("AND", new Expression[] {cmp("=", "offset", 1L), value});
    Predicate[] all = {upper, value, or, offsetIn, halfAnd};
    RangeFilter.Split split = RangeFilter.split(all);
    assertEquals(List.of(), split.pushed());
    assertEquals(List.of(all), split.residual());
    assertEquals(RangeFilter.ALL, split.filter());
  }
}

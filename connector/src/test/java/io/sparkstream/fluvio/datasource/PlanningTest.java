package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sparkstream.fluvio.client.PartitionOffsets;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.util.SerializableConfiguration;
import org.junit.jupiter.api.Test;

/** The pure planning rules (table-driven), and what Spark ships to executors. */
class PlanningTest {
  private static final PartitionOffsets NOW = new PartitionOffsets(10, 60, 50, -1);
  private static final OffsetSpec EARLIEST = new OffsetSpec(OffsetSpec.EARLIEST, List.of(), null);
  private static final OffsetSpec LATEST = new OffsetSpec(OffsetSpec.LATEST, List.of(), null);

  private static OffsetSpec at(long offset) {
    return new OffsetSpec(OffsetSpec.EARLIEST, List.of(new OffsetSpec.Specific("t", 0, offset)), null);
  }

  private static OffsetSpec time(long ms) {
    return new OffsetSpec(OffsetSpec.EARLIEST, List.of(), ms);
  }

  private static long resolve(OffsetSpec spec, long atTime, boolean failOnDataLoss) {
    return Planning.resolve(spec, "startingOffsets", "t", 0, NOW, 50, atTime, failOnDataLoss, "committed");
  }

  @Test
  void resolvesEachFormAsPythonDoes() {
    // spec, offset found for its time (-1: none), failOnDataLoss -> offset
    Object[][] rows = {
      {EARLIEST, -1L, true, 10L},
      {LATEST, -1L, true, 50L},
      {at(20), -1L, true, 20L},
      {at(50), -1L, true, 50L},
      {at(-2), -1L, true, 10L},
      {at(-1), -1L, true, 50L},
      {at(3), -1L, false, 10L},
      {time(1), 30L, true, 30L},
      {time(1), 5L, true, 10L},
      {time(1), 55L, true, 50L},
      {time(1), -1L, true, 50L},
    };
    for (Object[] r : rows) {
      assertEquals(r[3], resolve((OffsetSpec) r[0], (long) r[1], (boolean) r[2]), java.util.Arrays.toString(r));
    }
  }

  @Test
  void pastTheEndAndBelowTheLogStartFailNamingTheOption() {
    FluvioException past = assertThrows(FluvioException.class, () -> resolve(at(51), -1, true));
    assertEquals("option 'startingOffsets': offset 51 of t/0 is past its end 50 (committed)", past.getMessage());
    FluvioException lost = assertThrows(FluvioException.class, () -> resolve(at(3), -1, true));
    assertEquals(ErrorCode.DATA_LOSS, lost.code());
  }

  @Test
  void partitionsAreCheckedAgainstTheTopic() {
    assertEquals(List.of(0, 1, 2), Planning.partitions("t", 3, null));
    assertEquals(List.of(0, 2), Planning.partitions("t", 3, List.of(2, 0)));
    FluvioException e = assertThrows(FluvioException.class, () -> Planning.partitions("t", 2, List.of(0, 9, 4)));
    assertEquals("option 'partitions': topic 't' has no partition(s) 4, 9 (it has 2)", e.getMessage());
    FluvioException named = assertThrows(FluvioException.class,
        () -> Planning.checkNamed(at(1), "startingOffsets", Set.of("t/1")));
    assertEquals("option 'startingOffsets' names t/0, which the query does not read", named.getMessage());
  }

  @Test
  void minPartitionsSplitsRangesAsPlanRangesDoes() {
    // Values from datasource.planning.plan_ranges on the same input.
    List<FluvioInputPartition> ranges =
        List.of(new FluvioInputPartition("b", 0, 0, 10), new FluvioInputPartition("a", 1, 5, 35));
    List<FluvioInputPartition> split = Planning.ranges(ranges, 4);
    assertEquals(
        List.of(
            new FluvioInputPartition("a", 1, 5, 15),
            new FluvioInputPartition("a", 1, 15, 25),
            new FluvioInputPartition("a", 1, 25, 35),
            new FluvioInputPartition("b", 0, 0, 10)),
        split);
    assertEquals(List.of(ranges.get(1), ranges.get(0)), Planning.ranges(ranges, 2));
    assertEquals(List.of(ranges.get(1), ranges.get(0)), Planning.ranges(ranges, null));
  }

  @Test
  void aTaskStartsWhereRetentionLeftItsRange() {
    FluvioInputPartition planned = new FluvioInputPartition("t", 0, 20, 40, false);
    FluvioInputPartition earliest = new FluvioInputPartition("t", 0, 20, 40, true);
    assertEquals(20, Planning.checkedStart(planned, 20, true));
    assertEquals(30, Planning.checkedStart(earliest, 30, true));
    assertEquals(40, Planning.checkedStart(earliest, 45, true));
    assertEquals(30, Planning.checkedStart(planned, 30, false));
    FluvioException e = assertThrows(FluvioException.class, () -> Planning.checkedStart(planned, 30, true));
    assertEquals(
        "t/0: offsets 20..29 were removed by retention before they were read; "
            + "set failOnDataLoss=false to skip them",
        e.getMessage());
    assertEquals(ErrorCode.DATA_LOSS, e.code());
  }

  @Test
  void whatTravelsToExecutorsSerializes() throws Exception {
    ReaderOptions options =
        ReaderOptions.parseBatch(Map.of("topic", "t", "endpoint", "127.0.0.1:9003", "partitions", "0,1"));
    FluvioInputPartition partition = new FluvioInputPartition("t", 1, 5, 9);
    assertEquals(partition, roundTrip(partition));
    assertEquals(options, roundTrip(options));
    FluvioReaderFactory factory = new FluvioReaderFactory(options, ReadSchema.of(true), new SerializableConfiguration(new Configuration()));
    assertEquals(FluvioReaderFactory.class, roundTrip(factory).getClass());
  }

  private static Object roundTrip(Object o) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(o);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      return in.readObject();
    }
  }
}

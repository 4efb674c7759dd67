package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.protocol.Frame;
import io.sparkstream.fluvio.records.BatchHeader;
import io.sparkstream.fluvio.records.Compression;
import io.sparkstream.fluvio.records.Record;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/** The producer against loopback peers: an SC naming one SPU that leads three partitions. */
class IdempotentProducerTest {
  /** What the SPU saw of one PRODUCE: partition, producer id, sequence, record count. */
  record Sent(int partition, long producerId, int sequence, int count) {}

  private static Map<String, Object> describe(int partitions) {
    List<Object> parts = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      parts.add(Map.of("status", Map.of("leader", 1)));
    }
    return Map.of("topic", Map.of(), "partitions", parts, "revision", 1);
  }

  private static Map<String, Object> spus(FakePeer spu) {
    return Map.of(
        "spus",
        List.of(
            Map.of(
                "spec",
                Map.of(
                    "spuId", 1,
                    "publicEndpoint",
                    Map.of(
                        "port", spu.endpoint().port(),
                        "ingress", List.of(Map.of("hostname", "127.0.0.1")))))),
        "revision", 1);
  }

  private static Sent sent(Frame f) {
    BatchHeader h = BatchHeader.verify(f.tail(), 0);
    int partition = ((Number) f.decodeMeta().get("partition")).intValue();
    return new Sent(partition, h.producerId(), h.sequence(), h.recordCount());
  }

  private static Record rec(String key, String value) {
    return new Record(
        key == null ? null : key.getBytes(StandardCharsets.UTF_8),
        value.getBytes(StandardCharsets.UTF_8), 1_000L, null);
  }

  private static List<Sent> run(Function<Frame, Object> spuAnswer, List<Record> records, int frameRecords)
      throws Exception {
    List<Sent> seen = new CopyOnWriteArrayList<>();
    try (FakePeer spu = new FakePeer(f -> {
          seen.add(sent(f));
          return spuAnswer.apply(f);
        });
        FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(3) : spus(spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator()) {
      IdempotentProducer p =
          new IdempotentProducer(client, "t", 42L, Compression.NONE, 1, frameRecords, Long.MAX_VALUE, allocator);
      for (Record r : records) {
        p.send(r, null);
      }
      p.flush();
      assertEquals(records.size(), p.recordsSent());
    }
    return seen;
  }

  private static final Map<String, Object> OK = Map.of("base_offset", 0, "leo", 1, "hw", 1);

  @Test
  void framesAreCutByCountWithRecordBasedSequencesPerPartition() throws Exception {
    // Keyless records go round robin from partition 0: 7 records over 3 partitions,
    // 2 to a frame: p0 gets records 0, 3, 6 (a frame of 2, then 1 on flush), p1 gets 1, 4
    // and p2 gets 2, 5 (a frame of 2 each).
    List<Record> records = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      records.add(rec(null, "v" + i));
    }
    List<Sent> seen = run(f -> OK, records, 2);
    assertEquals(
        List.of(
            new Sent(0, 42, 0, 2),
            new Sent(1, 42, 0, 2),
            new Sent(2, 42, 0, 2),
            new Sent(0, 42, 2, 1)), // the flush
        seen);
  }

  @Test
  void keysGoWherePythonsFnvHashSendsThem() throws Exception {
    List<Record> records = List.of(rec("alpha", "a"), rec("beta", "b"), rec("gamma", "c"));
    List<Sent> seen = run(f -> OK, records, 100);
    List<Integer> partitions = seen.stream().map(Sent::partition).toList();
    List<Integer> expected =
        records.stream().map(r -> Partitioner.partitionFor(r.key(), 3)).distinct().sorted().toList();
    assertEquals(expected, partitions);
  }

  @Test
  void aDuplicateSequenceCountsAsDeliveredAndAnOutOfOrderRecordIsRetried() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    List<Sent> seen =
        run(
            f -> switch (calls.getAndIncrement()) {
              case 0 -> new FakePeer.Error(20, "sequence 0 of producer 42 is older than remembered");
              case 1 -> new FakePeer.Error(21, "sequence 1 skips ahead of the expected 0");
              default -> OK;
            },
            List.of(rec("k", "a"), rec("k", "b"), rec("k", "c")),
            1);
    int p = Partitioner.partitionFor("k".getBytes(StandardCharsets.UTF_8), 3);
    assertEquals(
        List.of(new Sent(p, 42, 0, 1), new Sent(p, 42, 1, 1), new Sent(p, 42, 1, 1), new Sent(p, 42, 2, 1)),
        seen);
  }

  @Test
  void aFrameStraddlingWhatTheLeaderHoldsIsSplitAndOnlyTheRestAppended() throws Exception {
    // The leader already holds sequences 0..2 of this producer (an earlier run cut them
    // differently); it answers as spu/producers.py does.
    List<Integer> appended = new CopyOnWriteArrayList<>();
    int[] expected = {3};
    List<Sent> seen =
        run(
            f -> {
              Sent s = sent(f);
              if (s.sequence() + s.count() <= expected[0]) {
                return OK; // wholly below: a duplicate, answered with its offset
              }
              if (s.sequence() != expected[0]) {
                return new FakePeer.Error(21, "straddles the expected sequence " + expected[0]);
              }
              for (int i = 0; i < s.count(); i++) {
                appended.add(s.sequence() + i);
              }
              expected[0] += s.count();
              return OK;
            },
            List.of(rec("k", "a"), rec("k", "b"), rec("k", "c"), rec("k", "d"), rec("k", "e")),
            5);
    assertEquals(List.of(3, 4), appended);
    assertEquals(List.of(0, 0, 2, 2, 3), seen.stream().map(Sent::sequence).toList());
  }

  @Test
  void anExplicitPartitionOutsideTheTopicIsRefused() throws Exception {
    try (FakePeer spu = new FakePeer(f -> OK);
        FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(3) : spus(spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator()) {
      IdempotentProducer p = new IdempotentProducer(client, "t", 1L, Compression.NONE, 1, 10, Long.MAX_VALUE, allocator);
      FluvioException e = assertThrows(FluvioException.class, () -> p.send(rec(null, "x"), 3));
      assertEquals(ErrorCode.UNKNOWN_PARTITION, e.code());
      assertEquals("partition column holds values outside 0..2", e.getMessage());
    }
  }
}

package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

  /** Waits (bounded) until {@code done} holds; the producer's sender works meanwhile. */
  private static void waitUntil(java.util.function.BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not reached in 20 s");
      }
      Thread.sleep(5);
    }
  }

  /**
   * A leader judging idempotent frames as {@code spu/producers.py} does, one partition:
   * a frame wholly below the expected sequence is a duplicate, one at it is appended,
   * anything else (a gap, a straddle) is {@code OutOfOrderSequenceError}.
   */
  private static final class Leader implements Function<Frame, Object> {
    final List<Integer> appended = new CopyOnWriteArrayList<>();
    int expected;

    @Override
    public synchronized Object apply(Frame f) {
      Sent s = sent(f);
      if (s.sequence() + s.count() <= expected) {
        return OK;
      }
      if (s.sequence() != expected) {
        return new FakePeer.Error(21, "sequence %d is not the expected %d".formatted(s.sequence(), expected));
      }
      for (int i = 0; i < s.count(); i++) {
        appended.add(s.sequence() + i);
      }
      expected += s.count();
      return OK;
    }
  }

  /** Send {@code records} keyed "k" (one partition) under producer 7, then flush. */
  private static void produceRun(FakePeer sc, List<Record> records, int frameRecords, long lingerMs)
      throws Exception {
    try (LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator();
        IdempotentProducer p = new IdempotentProducer(
            client, "t", 7L, Compression.NONE, 1, frameRecords, Long.MAX_VALUE, lingerMs, allocator)) {
      for (int i = 0; i < records.size(); i++) {
        p.send(records.get(i), null);
        if (i % 10 == 9) {
          Thread.sleep(2); // a slow input: some lingers end between records
        }
      }
      p.flush();
    }
  }

  @Test
  void aLingerSendsAPartialFrameWithoutAFlush() throws Exception {
    Leader leader = new Leader();
    try (FakePeer spu = new FakePeer(leader);
        FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(3) : spus(spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator();
        IdempotentProducer p = new IdempotentProducer(
            client, "t", 7L, Compression.NONE, 1, 1_000, Long.MAX_VALUE, 5, allocator)) {
      for (String v : List.of("a", "b", "c")) {
        p.send(rec("k", v), null);
      }
      // Far from full and never flushed: the linger alone sends the three records.
      // The sender counts a frame once its reply is in, after the leader appended it.
      waitUntil(() -> p.recordsSent() == 3);
      assertEquals(List.of(0, 1, 2), leader.appended);
      assertTrue(p.lingerCuts() >= 1);
      p.flush(); // nothing left: no frame more
      assertEquals(List.of(ApiKeys.PRODUCE), spu.asked.stream().distinct().toList());
    }
  }

  @Test
  void aReRunCutElsewhereByALingerLandsEachRecordOnce() throws Exception {
    List<Record> records = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      records.add(rec("k", "v" + i));
    }
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      all.add(i);
    }
    // Each way round: the first run (cut by a linger of 0, or by count) appends 37 records
    // and dies; the re-run (cut the other way) sends all 100 under the same producer id.
    // {first run: frameRecords, lingerMs; re-run: frameRecords, lingerMs}
    long[][] cases = {{16, 0, 16, -1}, {16, -1, 1_000, 0}};
    for (long[] c : cases) {
      Leader leader = new Leader();
      try (FakePeer spu = new FakePeer(leader);
          FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(1) : spus(spu))) {
        produceRun(sc, records.subList(0, 37), (int) c[0], c[1]);
        assertEquals(all.subList(0, 37), leader.appended);
        produceRun(sc, records, (int) c[2], c[3]);
        assertEquals(all, leader.appended, "each record once, in order: " + java.util.Arrays.toString(c));
      }
    }
  }

  @Test
  void afterAFailedSendNoLaterFrameGoesAndTheErrorIsRaised() throws Exception {
    List<Sent> seen = new CopyOnWriteArrayList<>();
    try (FakePeer spu = new FakePeer(f -> {
          seen.add(sent(f));
          return new FakePeer.Error(2, "bad frame");
        });
        FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(1) : spus(spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator();
        IdempotentProducer p = new IdempotentProducer(
            client, "t", 7L, Compression.NONE, 1, 1, Long.MAX_VALUE, 5, allocator)) {
      FluvioException e = assertThrows(FluvioException.class, () -> {
        for (int i = 0; i < 3; i++) {
          p.send(rec("k", "v" + i), null);
        }
        p.flush();
      });
      assertEquals(ErrorCode.INVALID_REQUEST, e.code());
      assertEquals(List.of(new Sent(0, 7, 0, 1)), seen); // the frames after it never went
      assertEquals(0, p.recordsSent());
    }
  }

  @Test
  void manyOneRecordFramesAllGoThroughTheSender() throws Exception {
    Leader leader = new Leader();
    try (FakePeer spu = new FakePeer(leader);
        FakePeer sc = new FakePeer(f -> f.header().apiKey() == ApiKeys.DESCRIBE_TOPIC ? describe(1) : spus(spu));
        LeaderClient client = new LeaderClient(sc.endpoint(), 10_000);
        BufferAllocator allocator = new RootAllocator();
        IdempotentProducer p = new IdempotentProducer(
            client, "t", 7L, Compression.NONE, 1, 10_000, 1, 5, allocator)) {
      for (int i = 0; i < 300; i++) {
        p.send(rec(null, "v" + i), null);
      }
      waitUntil(() -> leader.appended.size() == 300);
      p.flush();
      assertEquals(300, p.framesSent());
    }
  }
}

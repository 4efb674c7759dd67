package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkstream.fluvio.datasource.FluvioOffset.TopicPartition;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code progressGroup} mirror's rules, as {@code datasource/progress.py} has them. */
class ProgressMirrorTest {
  private static final TopicPartition T0 = new TopicPartition("t", 0);

  /** A writer that records what it writes and fails with {@code failWith} while set. */
  private static final class Sc implements ProgressMirror.Writer {
    final List<Map<String, Long>> writes = new ArrayList<>();
    FluvioException failWith;

    @Override
    public List<String> write(String group, Map<String, Long> offsets) {
      if (failWith != null) {
        throw failWith;
      }
      writes.add(offsets);
      return List.of();
    }
  }

  @Test
  void aGroupOfMembersFailsTheClaimNamingTheOption() {
    for (ErrorCode code : List.of(ErrorCode.GROUP_NOT_EMPTY, ErrorCode.INVALID_REQUEST)) {
      Sc sc = new Sc();
      sc.failWith = new FluvioException(code, "group: 'm' is a group of members");
      ProgressMirror mirror = new ProgressMirror("m", sc);
      FluvioException e = assertThrows(FluvioException.class, mirror::claim);
      assertEquals("DataSourceOptionError: option 'progressGroup': group: 'm' is a group of members", e.toString());
    }
  }

  @Test
  void anUnreachableScIsRetriedAndNeverFailsTheQuery() {
    Sc sc = new Sc();
    sc.failWith = new FluvioException(ErrorCode.CONNECTION_CLOSED, "cannot connect");
    ProgressMirror mirror = new ProgressMirror("g", sc);
    mirror.claim();
    assertFalse(mirror.claimed());
    mirror.mirror(Map.of(T0, 5L));
    assertEquals(Map.of(T0, 5L), mirror.pending());
    mirror.mirror(Map.of(T0, 9L)); // newer offsets replace the pending ones
    assertEquals(Map.of(T0, 9L), mirror.pending());
    sc.failWith = null;
    mirror.claim();
    assertTrue(mirror.claimed());
    mirror.flush();
    assertNull(mirror.pending());
    assertEquals(List.of(Map.of(), Map.of("t/0", 9L)), sc.writes);
  }

  @Test
  void anEqualPositionIsWrittenOnceAndAnOlderOneMovesTheGroupBack() {
    Sc sc = new Sc();
    ProgressMirror mirror = new ProgressMirror("g", sc);
    mirror.mirror(Map.of(T0, 5L));
    mirror.mirror(Map.of(T0, 5L));
    mirror.mirror(Map.of(T0, 3L)); // a restart from an older checkpoint: the checkpoint rules
    assertEquals(List.of(Map.of("t/0", 5L), Map.of("t/0", 3L)), sc.writes);
  }

  @Test
  void anyOtherFailureOfAWriteIsOnlyAWarning() {
    ProgressMirror mirror = new ProgressMirror("g", (g, o) -> {
      throw new IllegalStateException("boom");
    });
    mirror.claim();
    mirror.mirror(Map.of(T0, 1L));
    assertFalse(mirror.claimed());
    assertEquals(Map.of(T0, 1L), mirror.pending());
  }
}

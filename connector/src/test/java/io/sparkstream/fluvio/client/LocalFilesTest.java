package io.sparkstream.fluvio.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Local reads of a real file: the range when it is the file named, null otherwise. */
class LocalFilesTest {
  @TempDir Path dir;

  private static String text(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return new String(out, StandardCharsets.US_ASCII);
  }

  @Test
  void readsTheNamedRangeMappedOrCopiedAndNothingElse() throws Exception {
    Path file = dir.resolve("00000000000000000000.log");
    Files.writeString(file, "0123456789abcdef", StandardCharsets.US_ASCII);
    long dev = ((Number) Files.getAttribute(file, "unix:dev")).longValue();
    long ino = ((Number) Files.getAttribute(file, "unix:ino")).longValue();
    String path = file.toString();
    assertEquals("456789", text(LocalFiles.read(path, 4, 6, dev, ino, true)));
    assertEquals("456789", text(LocalFiles.read(path, 4, 6, dev, ino, false)));
    assertNull(LocalFiles.read(path, 4, 6, dev, ino + 1, true)); // another file at that path
    assertNull(LocalFiles.read(path, 4, 6, dev + 1, ino, false));
    assertNull(LocalFiles.read(path, 10, 7, dev, ino, true)); // past the end
    assertNull(LocalFiles.read(dir.resolve("gone.log").toString(), 0, 1, dev, ino, false));
    // Recreated at the same path (as after a topic is recreated): a new inode, refused.
    Files.delete(file);
    Files.writeString(file, "0123456789abcdef", StandardCharsets.US_ASCII);
    long newIno = ((Number) Files.getAttribute(file, "unix:ino")).longValue();
    if (newIno != ino) {
      assertNull(LocalFiles.read(path, 4, 6, dev, ino, false));
    }
  }
}

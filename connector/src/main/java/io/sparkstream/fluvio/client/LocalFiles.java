package io.sparkstream.fluvio.client;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Local fetches ({@code spark_stream/client/consumer/local_files.py}): read the byte range
 * a {@code FETCH_LOCAL} reply names straight from the leader's segment file, when this
 * process can open that path and finds the very file the leader named there (same
 * device and inode, before and after opening). Anything else (another host, another user,
 * the segment deleted by retention, a range past the file's end) gives null, and the
 * caller fetches over the network; frames are crc-checked either way.
 *
 * <p>Committed ranges are memory-mapped (frames below the high watermark are never
 * truncated, only deleted with their whole segment, which leaves a mapping intact);
 * uncommitted ranges may be truncated when leadership moves, so they are copied.
 */
public final class LocalFiles {
  private LocalFiles() {}

  /**
   * The bytes of a range of a leader's segment file, or null when they cannot be read here.
   *
   * @param path the segment file's path, as the leader names it
   * @param position byte position of the first frame
   * @param length bytes of back-to-back frames
   * @param device the file's {@code st_dev} on the leader
   * @param inode the file's {@code st_ino} on the leader
   * @param mapped map the range instead of copying it (committed ranges only)
   * @return the bytes (position 0, limit {@code length}), or null
   */
  public static ByteBuffer read(
      String path, long position, long length, long device, long inode, boolean mapped) {
    Path file = Path.of(path);
    if (!sameFile(file, device, inode)) {
      return null;
    }
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      if (!sameFile(file, device, inode) || channel.size() < position + length || length > Integer.MAX_VALUE) {
        return null; // replaced while opening, or the range is not (or no longer) there
      }
      if (mapped) {
        return channel.map(FileChannel.MapMode.READ_ONLY, position, length);
      }
      ByteBuffer out = ByteBuffer.allocate((int) length);
      while (out.hasRemaining()) {
        if (channel.read(out, position + out.position()) < 0) {
          return null;
        }
      }
      return out.flip();
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return null;
    }
  }

  private static boolean sameFile(Path file, long device, long inode) {
    try {
      Object dev = Files.getAttribute(file, "unix:dev");
      Object ino = Files.getAttribute(file, "unix:ino");
      return dev instanceof Number d && ino instanceof Number i
          && d.longValue() == device && i.longValue() == inode;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException | SecurityException e) {
      return false;
    }
  }
}

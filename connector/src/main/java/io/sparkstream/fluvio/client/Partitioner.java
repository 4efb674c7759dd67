package io.sparkstream.fluvio.client;

/**
 * The key hash of the default partitioner ({@code spark_stream/client/producer/
 * partitioner.py}): 32-bit FNV-1a of the key bytes; a keyed record goes to partition
 * {@code hash % partitions}. Both sides must agree bit for bit, or a Java sink and a
 * Python producer would spread the same keys differently (checked by the shared vectors).
 */
public final class Partitioner {
  private Partitioner() {}

  /** The FNV-1a 32-bit offset basis. */
  public static final int FNV_OFFSET = 0x811C9DC5;

  /** The FNV-1a 32-bit prime. */
  public static final int FNV_PRIME = 0x01000193;

  /**
   * 32-bit FNV-1a of a key; a null key hashes as empty, as in {@code fnv1a_32_array}.
   *
   * @param key the key bytes
   * @return the hash as an unsigned value
   */
  public static long fnv1a32(byte[] key) {
    int h = FNV_OFFSET;
    if (key != null) {
      for (byte b : key) {
        h = (h ^ (b & 0xFF)) * FNV_PRIME;
      }
    }
    return Integer.toUnsignedLong(h);
  }

  /**
   * The partition of a keyed record.
   *
   * @param key the key bytes
   * @param partitions the topic's partition count, at least 1
   * @return the partition index
   */
  public static int partitionFor(byte[] key, int partitions) {
    return (int) (fnv1a32(key) % partitions);
  }
}

package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Stable idempotent producer ids, {@code producer_id_for} of {@code
 * spark_stream/client/config.py}: BLAKE2b-64 of the parts' text joined by U+001F, read
 * big-endian, reduced to {@code 1 .. MAX_PRODUCER_ID}. A sink derives its id from (query
 * id, batch id, partition), so a retried task produces under the identity of the first
 * attempt, whichever side (Java or Python) ran it.
 */
public final class ProducerIds {
  private ProducerIds() {}

  /** The largest producer id (2^63 - 1). */
  public static final long MAX_PRODUCER_ID = Long.MAX_VALUE;

  /**
   * The id of an identity.
   *
   * @param parts strings and integers (integers in decimal, as Python's {@code str})
   * @return the id, in {@code 1 .. MAX_PRODUCER_ID}
   * @throws FluvioException {@code INVALID_CONFIG}: no parts, or a part of another type
   */
  public static long producerIdFor(Object... parts) {
    if (parts.length == 0) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "producer_id_for: needs at least one part");
    }
    List<String> texts = new ArrayList<>(parts.length);
    for (Object part : parts) {
      if (part instanceof String || part instanceof Long || part instanceof Integer
          || part instanceof java.math.BigInteger) {
        texts.add(part.toString());
      } else {
        throw new FluvioException(
            ErrorCode.INVALID_CONFIG,
            "producer_id_for: parts must be strings or integers, got " + part);
      }
    }
    byte[] text = String.join("\u001f", texts).getBytes(StandardCharsets.UTF_8);
    byte[] digest = Blake2b.digest(text, 8);
    long value = 0;
    for (byte b : digest) {
      value = (value << 8) | (b & 0xFFL);
    }
    return Long.remainderUnsigned(value, MAX_PRODUCER_ID) + 1;
  }
}

package io.sparkstream.fluvio.client;

import java.nio.ByteBuffer;

/**
 * A {@code FETCH} reply: the partition's offsets at read time and the batch frames read,
 * back to back from the frame holding the requested offset (possibly none).
 *
 * @param offsets log start, LEO and HW
 * @param frames the frames' bytes
 */
public record FetchResult(PartitionOffsets offsets, ByteBuffer frames) {}

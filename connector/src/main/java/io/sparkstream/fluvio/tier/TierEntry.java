package io.sparkstream.fluvio.tier;

/**
 * One tiered file of a partition: the offsets {@code [baseOffset, nextOffset)} it holds (a
 * manifest entry, as {@code spark_stream/tier/manifest.py}'s {@code TierEntry}).
 *
 * @param baseOffset first offset in the file (also its name)
 * @param nextOffset offset after its last record
 * @param records rows in the file ({@code nextOffset - baseOffset})
 * @param bytes the file's size
 * @param file its path relative to the topic's tier ({@code partition={p}/{base:020}.parquet})
 * @param maxTimestamp newest record timestamp in it, microseconds since the epoch (-1: unknown)
 */
public record TierEntry(
    long baseOffset, long nextOffset, long records, long bytes, String file, long maxTimestamp) {}

package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Spark partition of a batch read: the records {@code [start, end)} of one topic
 * partition. Plain values only, so it serializes to executors.
 *
 * @param topic the topic
 * @param partition the partition
 * @param start first offset read
 * @param end offset after the last one read
 */
record FluvioInputPartition(String topic, int partition, long start, long end)
    implements InputPartition {}

package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One topic partition read without an end, by a continuous or real-time task, from {@code
 * start} on. Plain values only, so it serializes to executors.
 *
 * @param topic the topic
 * @param partition the partition
 * @param start the first offset to read
 * @param fromLogStart the partition is new to the query: start wherever its log starts
 *     (records below are not data loss)
 */
record FluvioStreamPartition(String topic, int partition, long start, boolean fromLogStart)
    implements InputPartition {}

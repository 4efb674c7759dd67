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
 * @param fromLogStart the range starts wherever the log starts now (as Python's, for a
 *     partition a stream discovers mid-query), so records below it are not data loss;
 *     always false for batch reads, as in Python
 */
record FluvioInputPartition(String topic, int partition, long start, long end, boolean fromLogStart)
    implements InputPartition {

  /** A range that was not planned from the log start. */
  FluvioInputPartition(String topic, int partition, long start, long end) {
    this(topic, partition, start, end, false);
  }
}

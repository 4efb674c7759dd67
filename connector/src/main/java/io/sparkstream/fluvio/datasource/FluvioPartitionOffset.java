package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/**
 * Where a continuous or real-time reader is in its partition: the next offset it will
 * return. Spark merges these into a {@link FluvioOffset} ({@code mergeOffsets}).
 *
 * @param topic the topic
 * @param partition the partition
 * @param offset the next offset to read
 */
record FluvioPartitionOffset(String topic, int partition, long offset) implements PartitionOffset {}

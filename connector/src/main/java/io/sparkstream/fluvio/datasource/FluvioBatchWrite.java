package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.ProducerIds;
import java.util.logging.Logger;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * {@code df.write.format("fluvio")}: each task writes once under {@code
 * producer_id_for("batch", write id, task)}, the write id drawn once on the driver, so a
 * retried task is deduplicated by the leaders ({@code FluvioBatchWriter} in Python).
 */
final class FluvioBatchWrite implements BatchWrite {
  private static final Logger LOG = Logger.getLogger(FluvioBatchWrite.class.getName());

  private final WriterOptions opts;
  private final SinkColumns columns;
  private final StructType schema;
  private final String writeId;

  FluvioBatchWrite(WriterOptions opts, SinkColumns columns, StructType schema, String writeId) {
    this.opts = opts;
    this.columns = columns;
    this.schema = schema;
    this.writeId = writeId;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new Factory(opts, columns, schema, writeId);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    LOG.info("fluvio batch write %s committed: %d records".formatted(writeId, FluvioCommitMessage.total(messages)));
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    LOG.warning(
        "fluvio batch write %s aborted; %d records of finished tasks remain in the topic"
            .formatted(writeId, FluvioCommitMessage.total(messages)));
  }

  /** What Spark ships to the executors: options, columns and the write id only. */
  record Factory(WriterOptions opts, SinkColumns columns, StructType schema, String writeId)
      implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      long pid = ProducerIds.producerIdFor("batch", writeId, partitionId);
      return new FluvioDataWriter(opts, columns, schema, pid, partitionId);
    }
  }
}

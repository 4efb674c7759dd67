package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.ProducerIds;
import java.util.logging.Logger;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.StructType;

/**
 * {@code df.writeStream.format("fluvio")}: exactly once per batch (epoch). Each task
 * produces under {@code producer_id_for(query id, batch id, task)}, the identity Python's
 * {@code FluvioStreamWriter} derives, so a batch re-run after a crash, by either side,
 * sends the same frames under the same ids and each leader drops what it already holds.
 * Commit and abort keep no state: the records are in their topics once the tasks end.
 */
final class FluvioStreamingWrite implements StreamingWrite {
  /** Task local property Spark sets to the streaming query's id (stable across restarts). */
  static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";

  private static final Logger LOG = Logger.getLogger(FluvioStreamingWrite.class.getName());

  private final WriterOptions opts;
  private final SinkColumns columns;
  private final StructType schema;
  private final String queryId;

  FluvioStreamingWrite(WriterOptions opts, SinkColumns columns, StructType schema, String queryId) {
    this.opts = opts;
    this.columns = columns;
    this.schema = schema;
    this.queryId = queryId;
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    return new Factory(opts, columns, schema, queryId);
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    LOG.info("fluvio sink: batch %d committed, %d records".formatted(epochId, FluvioCommitMessage.total(messages)));
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    LOG.warning("fluvio sink: batch %d aborted; its re-run is deduplicated".formatted(epochId));
  }

  /** What Spark ships to the executors. */
  record Factory(WriterOptions opts, SinkColumns columns, StructType schema, String queryId)
      implements StreamingDataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
      // The task property is what Python reads; the write info's id is the same query id.
      TaskContext ctx = TaskContext.get();
      String property = ctx == null ? null : ctx.getLocalProperty(QUERY_ID_PROPERTY);
      String query = property == null ? queryId : property;
      long pid = ProducerIds.producerIdFor(query, epochId, partitionId);
      return new FluvioDataWriter(opts, columns, schema, pid, partitionId);
    }
  }
}

package io.sparkstream.fluvio.datasource;

import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What one write task produced ({@code FluvioCommitMessage} of {@code datasource/writer.py}).
 *
 * @param task the Spark partition id of the task
 * @param producerId the idempotent producer id it wrote under
 * @param records rows it sent (duplicates a leader dropped included)
 * @param topics topics it wrote to, sorted
 */
public record FluvioCommitMessage(int task, long producerId, long records, List<String> topics)
    implements WriterCommitMessage {

  static long total(WriterCommitMessage[] messages) {
    long n = 0;
    for (WriterCommitMessage m : messages) {
      if (m instanceof FluvioCommitMessage f) {
        n += f.records();
      }
    }
    return n;
  }
}

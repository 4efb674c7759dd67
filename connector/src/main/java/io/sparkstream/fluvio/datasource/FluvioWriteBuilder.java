package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.UUID;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;

/**
 * {@code df.write} and {@code df.writeStream} to topics: the options and columns are
 * checked here, on the driver, before any task runs, with the Python writer's messages.
 * A DataFrame without a {@code value} column written to a typed topic writes its user
 * columns ({@link TypedSink}). With {@code mergeSchema=true} the topic's schema is first set
 * from the DataFrame's user columns ({@link SchemaMerge}).
 *
 * <p>Topics are append-only. {@code mode("overwrite")} and {@code outputMode("complete")}
 * reach Spark as a truncate, which is accepted here only to be refused when the write is
 * built, with Python's message for each. {@code outputMode("update")} (which real-time
 * mode needs) appends, as Spark's Kafka sink does.
 */
final class FluvioWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsStreamingUpdateAsAppend {
  private final LogicalWriteInfo info;
  private boolean truncate;

  FluvioWriteBuilder(LogicalWriteInfo info) {
    this.info = info;
  }

  @Override
  public WriteBuilder truncate() {
    truncate = true;
    return this;
  }

  @Override
  public Write build() {
    WriterOptions opts = WriterOptions.parse(info.options());
    // A DataFrame with a 'value' column writes records (no typed topic has one): only one
    // without it asks the SC whether the topic is typed, as the Python writer does.
    boolean typedRows =
        opts.topic() != null && !java.util.List.of(info.schema().fieldNames()).contains("value");
    TopicSchema typed;
    if (opts.mergeSchema()) { // once, on the driver, before any task writes
      typed = SchemaMerge.merge(opts.endpoint(), opts.topic(), info.schema(), opts.token());
    } else {
      typed =
          typedRows
              ? TypedSchema.lookUp(opts.endpoint(), java.util.List.of(opts.topic()), opts.token())
              : null;
    }
    SinkColumns columns =
        typed == null
            ? SinkColumns.of(info.schema(), opts.topic() != null, opts.preservePartitions())
            : SinkColumns.typed(info.schema(), typed, opts.topic(), opts.preservePartitions());
    boolean truncating = truncate;
    return new Write() {
      @Override
      public String description() {
        return "fluvio sink";
      }

      @Override
      public BatchWrite toBatch() {
        if (truncating) {
          throw new FluvioException(
              ErrorCode.DATA_SOURCE_OPTION,
              "mode('overwrite') is not supported: topics are append-only; use mode('append')");
        }
        String writeId = UUID.randomUUID().toString().replace("-", "");
        return new FluvioBatchWrite(opts, columns, info.schema(), writeId);
      }

      @Override
      public StreamingWrite toStreaming() {
        if (truncating) {
          throw new FluvioException(
              ErrorCode.DATA_SOURCE_OPTION, "outputMode('complete') is not supported: topics are append-only");
        }
        return new FluvioStreamingWrite(opts, columns, info.schema(), info.queryId());
      }
    };
  }
}

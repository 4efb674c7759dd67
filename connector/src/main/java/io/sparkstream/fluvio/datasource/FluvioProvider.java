package io.sparkstream.fluvio.datasource;

import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.records.TopicSchema;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The entry point of the JVM connector: Spark finds it by the short name {@code fluvio}
 * through {@code META-INF/services/org.apache.spark.sql.sources.DataSourceRegister} and
 * prefers it to the Python source of the same name whenever this jar is on the classpath.
 *
 * <p>It serves batch reads, streams (micro-batch, continuous, real-time) and batch and
 * streaming writes (see docs/jvm-connector.md); the read schema depends on {@code
 * includeHeaders}, or is a typed topic's columns ({@link TypedSchema}), and unknown
 * reader option names fail here, at {@code load()}, as in Python.
 */
public final class FluvioProvider implements TableProvider, DataSourceRegister {

  @Override
  public String shortName() {
    return "fluvio";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    // Spark calls this for a write too, with the writer's options: those are checked
    // (against the writer's names) when the write is built, so only a read checks here.
    // A read of a typed topic has its columns: asked of the SC here, at load(), as the
    // Python source does; a write looks the topic up when it is built.
    if (!calledByAWriter()) {
      ReaderOptions.checkNames(options);
      List<String> topics = ReaderOptions.namedTopics(options);
      TopicSchema typed = topics.isEmpty() ? null : lookUpTyped(options, topics);
      if (typed != null) {
        return TypedSchema.of(typed);
      }
    }
    String headers = options.getOrDefault("includeHeaders", "false");
    return ReadSchema.of(headers.strip().equalsIgnoreCase("true"));
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new FluvioTable(schema);
  }

  /** The typed schema of the topics a read names, asked of the SC with the read's token. */
  private static TopicSchema lookUpTyped(Map<String, String> options, List<String> topics) {
    Endpoint endpoint = ReaderOptions.namedEndpoint(options);
    return TypedSchema.lookUp(endpoint, topics, ReaderOptions.namedToken(options, endpoint));
  }

  /**
   * Whether Spark's {@code DataFrameWriter} or {@code DataStreamWriter} is asking. The
   * DSv2 API does not tell {@code inferSchema} whether it serves a read or a write, and
   * an unknown option must be named with the right list of known ones (a read's at
   * {@code load()}, as Python does, and a write's when the write starts).
   */
  private static boolean calledByAWriter() {
    return StackWalker.getInstance()
        .walk(
            frames ->
                frames.anyMatch(
                    f -> {
                      String c = f.getClassName();
                      return c.startsWith("org.apache.spark.sql.")
                          && (c.endsWith(".DataFrameWriter") || c.endsWith(".DataStreamWriter")
                              || c.endsWith(".DataFrameWriterV2"));
                    }));
  }
}

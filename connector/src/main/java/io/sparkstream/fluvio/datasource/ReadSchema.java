package io.sparkstream.fluvio.datasource;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The DataFrame schema of {@code format("fluvio")} reads, {@code spark_schema} of {@code
 * datasource/schema.py} (as in Spark's Kafka source): key, value, topic, partition,
 * offset, timestamp, timestampType, and headers with {@code includeHeaders}.
 */
public final class ReadSchema {
  private ReadSchema() {}

  /** {@code timestampType} of every record: the producer's create time (Kafka's 0). */
  public static final int TIMESTAMP_TYPE_CREATE = 0;

  /**
   * The schema.
   *
   * @param includeHeaders add the {@code headers} column
   * @return the struct type
   */
  public static StructType of(boolean includeHeaders) {
    StructType schema =
        new StructType(
            new StructField[] {
              field("key", DataTypes.BinaryType, true),
              field("value", DataTypes.BinaryType, false),
              field("topic", DataTypes.StringType, false),
              field("partition", DataTypes.IntegerType, false),
              field("offset", DataTypes.LongType, false),
              field("timestamp", DataTypes.TimestampType, false),
              field("timestampType", DataTypes.IntegerType, false),
            });
    if (includeHeaders) {
      StructType header =
          new StructType(
              new StructField[] {
                field("key", DataTypes.StringType, false), field("value", DataTypes.BinaryType, true)
              });
      schema = schema.add(field("headers", new ArrayType(header, true), true));
    }
    return schema;
  }

  private static StructField field(String name, org.apache.spark.sql.types.DataType type, boolean nullable) {
    return new StructField(name, type, nullable, Metadata.empty());
  }
}

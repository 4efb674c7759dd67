package io.sparkstream.fluvio.records;

import java.util.List;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The Arrow schema of a batch frame's payload, {@code RECORD_SCHEMA} of {@code
 * spark_stream/records.py}: the frame's IPC message carries no schema, so the reader
 * supplies this one.
 *
 * <pre>
 * key        binary, nullable
 * value      binary
 * timestamp  timestamp[us, tz=UTC]
 * headers    list&lt;item: struct&lt;key: string not null, value: binary&gt;&gt;, nullable
 * </pre>
 */
public final class RecordSchema {
  private RecordSchema() {}

  /** The payload schema. */
  public static final Schema SCHEMA = build();

  private static Schema build() {
    Field header =
        new Field(
            "item",
            FieldType.nullable(ArrowType.Struct.INSTANCE),
            List.of(
                new Field("key", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null),
                new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null)));
    return new Schema(
        List.of(
            new Field("key", FieldType.nullable(ArrowType.Binary.INSTANCE), null),
            new Field("value", FieldType.notNullable(ArrowType.Binary.INSTANCE), null),
            new Field(
                "timestamp",
                FieldType.notNullable(new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
                null),
            new Field("headers", FieldType.nullable(ArrowType.List.INSTANCE), List.of(header))));
  }
}

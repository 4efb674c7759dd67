package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.BatchFrames;
import io.sparkstream.fluvio.records.BatchHeader;
import io.sparkstream.fluvio.records.Compression;
import io.sparkstream.fluvio.records.FrameBuffer;
import io.sparkstream.fluvio.records.FrameEncoder;
import io.sparkstream.fluvio.records.Record;
import io.sparkstream.fluvio.records.TopicSchema;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Typed topics against the vectors Python writes ({@code typed_frames.json}): the spec's
 * schema, the read schema PySpark derives, typed frames of two schema versions in each
 * compression (decoded in place and copied, read through the Spark columns, older frames
 * null in the newer column), frames this side encodes, and the driver's sink checks with
 * Python's messages.
 */
class TypedFramesTest {
  private static final JsonNode VECTORS = Vectors.load("typed_frames.json");
  private BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close(); // fails the test if a root or a frame buffer leaked
  }

  @SuppressWarnings("unchecked")
  private static TopicSchema schema() {
    return TopicSchema.fromSpec(new ObjectMapper().convertValue(VECTORS.get("topic_schema"), Map.class));
  }

  private static StructType readSchema() {
    return (StructType) DataType.fromJson(VECTORS.get("read_schema").asText());
  }

  @Test
  void theReadSchemaIsPySparksForEveryColumn() {
    assertEquals(readSchema(), TypedSchema.of(schema()));
    assertEquals(2, schema().version());
    assertEquals("timestamp[ms, tz=UTC]", schema().typeName(2));
  }

  @Test
  void storageSchemasArePythonsForEveryVersion() {
    TopicSchema schema = schema();
    for (int v = 1; v <= 2; v++) {
      Schema python = Schema.deserializeMessage(
          ByteBuffer.wrap(java.util.Base64.getDecoder().decode(VECTORS.get("storage_schemas").get("" + v).asText())));
      assertEquals(python, schema.storageSchema(v));
    }
  }

  @Test
  void typedFramesOfEveryVersionAndCompressionReadAsTheirRows() {
    List<String> seen = new ArrayList<>();
    for (JsonNode v : VECTORS.get("frames")) {
      byte[] bytes = Vectors.hex(v.get("bytes"));
      try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.allocateDirect(bytes.length).put(bytes).flip(), true, allocator)) {
        BatchHeader header = frames.header(0);
        assertEquals(v.get("schema_version").asInt(), header.schemaVersion());
        assertEquals(Compression.valueOf(v.get("compression").asText().toUpperCase()), header.compression());
        try (VectorSchemaRoot root = frames.decode(0, true, allocator)) {
          assertRows(v.get("rows"), root, header.baseOffset());
        }
      }
      // The copying decoder (the row readers of continuous and real-time streams) too.
      try (VectorSchemaRoot root = BatchFrames.decode(BatchFrames.split(ByteBuffer.wrap(bytes), true).get(0), allocator)) {
        assertRows(v.get("rows"), root, v.get("base_offset").asLong());
      }
      seen.add(v.get("name").asText());
    }
    assertEquals(List.of("v1_none", "v1_lz4", "v1_zstd", "v2_none", "v2_lz4", "v2_zstd"), seen);
  }

  @Test
  void prunedColumnsReadOnlyWhatIsAsked() {
    JsonNode v = VECTORS.get("frames").get(0);
    byte[] bytes = Vectors.hex(v.get("bytes"));
    StructType pruned = new StructType(new StructField[] {readSchema().apply("score"), readSchema().apply("ms")});
    try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.wrap(bytes), true, allocator);
        VectorSchemaRoot root = frames.decode(0, true, allocator)) {
      ColumnarBatch batch = FrameColumns.of(pruned, root, "t", 0, 0);
      assertInstanceOf(NullColumn.class, batch.column(0)); // v1 has no score
      assertInstanceOf(TimestampColumn.class, batch.column(1)); // ms read as microseconds
      assertEquals(5, batch.column(0).numNulls());
      assertEquals(v.get("rows").get(1).get("ms").asLong() * 1000, batch.column(1).getLong(1));
    }
  }

  @Test
  void aFrameWhoseColumnHasAnotherTypeIsCorrupt() {
    byte[] bytes = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    StructType wrong = new StructType().add("small", org.apache.spark.sql.types.DataTypes.LongType);
    try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.wrap(bytes), true, allocator);
        VectorSchemaRoot root = frames.decode(0, true, allocator)) {
      FluvioException e = assertThrows(FluvioException.class, () -> FrameColumns.of(wrong, root, "t", 0, 0));
      assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
      assertTrue(e.getMessage().contains("column 'small' is Int(16, true), expected bigint"), e.getMessage());
    }
  }

  @Test
  void anUntypedReadOfATypedFrameNamesTheTopic() {
    byte[] bytes = Vectors.hex(VECTORS.get("frames").get(0).get("bytes"));
    try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.wrap(bytes), true, allocator);
        VectorSchemaRoot root = frames.decode(0, true, allocator)) {
      FluvioException e =
          assertThrows(FluvioException.class, () -> FrameColumns.of(ReadSchema.of(false), root, "t", 0, 0));
      assertEquals(ErrorCode.DATA_SOURCE_OPTION, e.code());
      assertTrue(e.getMessage().startsWith("topic 't' is typed"), e.getMessage());
    }
  }

  @Test
  void framesEncodedHereCarryTheLatestVersionAndReadBack() {
    TopicSchema schema = schema();
    JsonNode rows = VECTORS.get("frames").get(3).get("rows"); // v2 rows
    StructType read = readSchema();
    List<Record> records = new ArrayList<>();
    for (JsonNode row : rows) {
      Object[] values = new Object[schema.names().size()];
      for (int c = 0; c < values.length; c++) {
        JsonNode x = row.get(schema.names().get(c));
        values[c] = x.isNull() ? null : javaValue(x, read.apply(schema.names().get(c)).dataType(), schema.typeName(c));
      }
      byte[] key = row.get("key").isNull() ? null : Vectors.hex(row.get("key"));
      records.add(new Record(key, null, row.get("timestamp").asLong(), null, values));
    }
    for (Compression codec : Compression.values()) {
      byte[] frame = FrameEncoder.encode(records, schema, codec, 42, 7, allocator);
      try (FrameBuffer frames = FrameBuffer.of(ByteBuffer.wrap(frame), true, allocator);
          VectorSchemaRoot root = frames.decode(0, true, allocator)) {
        assertEquals(2, frames.header(0).schemaVersion());
        assertEquals(codec, frames.header(0).compression());
        assertEquals(schema.storageSchema(2), root.getSchema());
        assertRows(rows, root, 0);
      }
    }
    // A timestamp finer than its column's unit does not fit, as Python's safe cast refuses it.
    Object[] fine = records.get(1).columns().clone();
    fine[2] = 1_500L; // ms column, 1.5 ms
    List<Record> bad = List.of(new Record(null, null, 1, null, fine));
    FluvioException e = assertThrows(FluvioException.class, () -> FrameEncoder.encode(bad, schema, Compression.NONE, -1, -1, allocator));
    assertEquals(ErrorCode.SCHEMA_MISMATCH, e.code());
    assertTrue(e.getMessage().startsWith("column 'ms' (timestamp[us]) does not fit timestamp[ms, tz=UTC]"), e.getMessage());
  }

  @Test
  void sinkChecksGivePythonsMessages() {
    for (JsonNode c : VECTORS.get("sink")) {
      StructType df = (StructType) DataType.fromJson(c.get("schema").asText());
      String expected = c.get("error").isNull() ? null : c.get("error").asText();
      String got;
      try {
        SinkColumns columns = SinkColumns.typed(df, schema(), "typed", null);
        assertEquals(-1, columns.value());
        assertEquals(df.fieldIndex("key"), columns.key());
        assertArrayEquals(new int[] {0, 1}, java.util.Arrays.copyOf(columns.typed().ordinals(), 2));
        got = null;
      } catch (FluvioException e) {
        got = e.toString();
      }
      assertEquals(expected, got, c.get("name").asText());
    }
  }

  /** The rows of a decoded typed frame, read through the columns Spark gets. */
  private static void assertRows(JsonNode rows, VectorSchemaRoot root, long firstOffset) {
    StructType read = readSchema();
    ColumnarBatch batch = FrameColumns.of(read, root, "typed", 3, firstOffset);
    assertEquals(rows.size(), batch.numRows());
    for (int r = 0; r < rows.size(); r++) {
      JsonNode row = rows.get(r);
      for (int c = 0; c < read.fields().length; c++) {
        StructField f = read.fields()[c];
        ColumnVector col = batch.column(c);
        String where = f.name() + " row " + r;
        switch (f.name()) {
          case "topic" -> assertEquals("typed", col.getUTF8String(r).toString(), where);
          case "partition" -> assertEquals(3, col.getInt(r), where);
          case "offset" -> assertEquals(firstOffset + r, col.getLong(r), where);
          case "headers" -> assertTrue(col.isNullAt(r), where);
          case "timestamp" -> assertEquals(row.get("timestamp").asLong(), col.getLong(r), where);
          default -> {
            JsonNode x = row.get(f.name());
            if (x.isNull()) {
              assertTrue(col.isNullAt(r), where);
            } else {
              assertEquals(expected(x, f.name(), f.dataType()), Vectors.cell(col, r, f.dataType()), where);
            }
          }
        }
      }
    }
  }

  /** The vector's JSON value as {@link #actual} reads it from a column. */
  private static Object expected(JsonNode x, String name, DataType type) {
    return switch (type.typeName()) {
      case "binary" -> x.asText();
      case "timestamp" -> switch (name) {
        case "ms" -> x.asLong() * 1000;
        case "ns" -> x.asLong() / 1000;
        default -> x.asLong();
      };
      case "float" -> (float) x.asDouble();
      case "boolean" -> x.asBoolean();
      case "string" -> x.asText();
      case "double" -> x.asDouble();
      default -> type instanceof DecimalType ? new BigDecimal(x.asText()) : x.asLong();
    };
  }


  /** A vector row's JSON value as the writer hands it to {@code FrameEncoder}. */
  private static Object javaValue(JsonNode x, DataType type, String arrowType) {
    return switch (type.typeName()) {
      case "binary" -> Vectors.hex(x);
      case "string" -> x.asText().getBytes(StandardCharsets.UTF_8);
      case "float" -> (float) x.asDouble();
      case "double" -> x.asDouble();
      case "boolean" -> x.asBoolean();
      case "short" -> (short) x.asInt();
      case "date" -> x.asInt();
      case "timestamp", "timestamp_ntz" -> arrowType.startsWith("timestamp[ms") ? x.asLong() * 1000
          : arrowType.startsWith("timestamp[ns") ? x.asLong() / 1000 : x.asLong();
      default -> type instanceof DecimalType ? new BigDecimal(x.asText()) : x.asLong();
    };
  }
}

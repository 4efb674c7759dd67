package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.TopicSchema;
import io.sparkstream.fluvio.tier.TierEntry;
import io.sparkstream.fluvio.tier.TierFileReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A typed topic's tier files as the SPU writes them ({@code tier_typed_file.json}: one
 * before the schema gained {@code score}, one after) read by {@link TierFileReader} into
 * the storage columns and served by {@link FrameColumns} as Spark gets them: every value
 * as Python wrote it, in every column type (timestamps of each unit, seconds stored as
 * milliseconds), the older file's {@code score} null; a column of another type than the
 * schema says and a column nested deeper than a list or a struct of scalars are refused,
 * naming the column; lists and structs ({@code tier_nested_file.json}) read as written.
 */
class TypedTierTest {
  private static final JsonNode VECTORS = Vectors.load("tier_typed_file.json");
  private BufferAllocator allocator;
  @TempDir Path tier;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close(); // fails the test if a root leaked
  }

  @SuppressWarnings("unchecked")
  private static TopicSchema schema() {
    return TopicSchema.fromSpec(new ObjectMapper().convertValue(VECTORS.get("topic_schema"), Map.class));
  }

  /** A one-version topic schema of {@code user} (types named as in {@code names}). */
  private static TopicSchema schemaOf(Schema user, List<String> names) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    MessageSerializer.serialize(new WriteChannel(Channels.newChannel(out)), user);
    Map<String, Object> spec = new HashMap<>();
    spec.put("version", 1);
    spec.put("arrow", Base64.getEncoder().encodeToString(out.toByteArray()));
    spec.put("columns", names.stream().map(n -> Map.of("type", n)).toList());
    spec.put("history", List.of(user.getFields().size()));
    return TopicSchema.fromSpec(spec);
  }

  /** The manifest entry of vector file {@code i}, written into the tier. */
  private TierEntry file(int i) throws IOException {
    JsonNode f = VECTORS.get("files").get(i);
    long base = f.get("base_offset").longValue();
    long records = f.get("records").longValue();
    String name = "partition=0/%020d.parquet".formatted(base);
    Path path = tier.resolve(name);
    Files.createDirectories(path.getParent());
    Files.write(path, Vectors.hex(f.get("parquet")));
    return new TierEntry(base, base + records, records, Files.size(path), name, -1);
  }

  @Test
  void bothFilesReadAsPythonWroteThemTheOlderOneNullInTheNewColumn() throws IOException {
    TopicSchema schema = schema();
    StructType read = TypedSchema.of(schema);
    JsonNode rows = VECTORS.get("rows");
    int row = 0;
    for (int i = 0; i < 2; i++) {
      TierEntry entry = file(i);
      try (TierFileReader reader = TierFileReader.open(tier.toString(), entry, schema, new Configuration())) {
        long first = reader.position();
        VectorSchemaRoot root;
        while ((root = reader.next(3, allocator)) != null) {
          try (VectorSchemaRoot r = root) {
            assertEquals(i == 1, r.getVector("score") != null, "file " + i + " holds score");
            assertNull(r.getVector("value"));
            assertRows(schema, read, rows, row, FrameColumns.of(read, r, "typed", 0, first));
            row += r.getRowCount();
            first += r.getRowCount();
          }
        }
        assertEquals(entry.nextOffset(), reader.position());
      }
    }
    assertEquals(rows.size(), row);
  }

  @Test
  void aSkipLandsOnTheRightRowOfEveryColumn() throws IOException {
    TopicSchema schema = schema();
    StructType read = TypedSchema.of(schema);
    TierEntry entry = file(1);
    int skipped = 5;
    int before = VECTORS.get("files").get(0).get("records").asInt();
    try (TierFileReader reader = TierFileReader.open(tier.toString(), entry, schema, new Configuration())) {
      reader.skip(skipped);
      try (VectorSchemaRoot root = reader.next(100, allocator)) {
        assertEquals(entry.records() - skipped, root.getRowCount());
        assertRows(schema, read, VECTORS.get("rows"), before + skipped,
            FrameColumns.of(read, root, "typed", 0, entry.baseOffset() + skipped));
      }
    }
  }

  @Test
  void aColumnOfAnotherTypeIsACorruptFileNamingIt() throws IOException {
    TopicSchema latest = schema();
    List<Field> fields = new ArrayList<>(latest.userSchema().getFields());
    List<String> names = new ArrayList<>();
    for (int i = 0; i < fields.size(); i++) {
      names.add(latest.typeName(i));
      if (fields.get(i).getName().equals("count")) {
        fields.set(i, new Field("count", FieldType.nullable(new ArrowType.Int(64, true)), null));
        names.set(i, "int64");
      }
    }
    TopicSchema wrong = schemaOf(new Schema(fields), names);
    TierEntry entry = file(0);
    FluvioException e = assertThrows(FluvioException.class, () -> TierFileReader.open(tier.toString(), entry, wrong, new Configuration()));
    assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
    assertTrue(e.getMessage().contains("column 'count' is optional int32 count, expected int64"), e.getMessage());
  }

  @Test
  void aColumnNestedDeeperThanAListOrAStructOfScalarsIsRefusedNamingIt() throws IOException {
    Field x = new Field("x", FieldType.nullable(new ArrowType.Int(32, true)), null);
    Field item = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(x));
    Field list = new Field("name", FieldType.nullable(ArrowType.List.INSTANCE), List.of(item));
    TopicSchema nested = schemaOf(new Schema(List.of(list)), List.of("list<item: struct<x: int32>>"));
    TierEntry entry = file(0);
    FluvioException e = assertThrows(FluvioException.class, () -> TierFileReader.open(tier.toString(), entry, nested, new Configuration()));
    assertEquals(ErrorCode.DATA_SOURCE_OPTION, e.code());
    assertTrue(e.getMessage().startsWith(
        "column 'name' (list<item: struct<x: int32>>) of a typed topic is not read from the tier"), e.getMessage());
  }

  @Test
  @SuppressWarnings("unchecked")
  void listAndStructColumnsReadAsPythonWroteThem() throws IOException {
    JsonNode vectors = Vectors.load("tier_nested_file.json");
    TopicSchema schema = TopicSchema.fromSpec(new ObjectMapper().convertValue(vectors.get("topic_schema"), Map.class));
    StructType read = TypedSchema.of(schema);
    long base = vectors.get("base_offset").longValue();
    long records = vectors.get("records").longValue();
    String name = "partition=0/%020d.parquet".formatted(base);
    Path path = tier.resolve(name);
    Files.createDirectories(path.getParent());
    Files.write(path, Vectors.hex(vectors.get("parquet")));
    TierEntry entry = new TierEntry(base, base + records, records, Files.size(path), name, -1);
    for (int skipped : new int[] {0, 3}) { // a skip passes over lists of every length
      List<String> got = new ArrayList<>();
      try (TierFileReader reader = TierFileReader.open(tier.toString(), entry, schema, new Configuration())) {
        reader.skip(skipped);
        VectorSchemaRoot root;
        while ((root = reader.next(4, allocator)) != null) {
          try (VectorSchemaRoot r = root) {
            ColumnarBatch batch = FrameColumns.of(read, r, "nested", 0, reader.position() - r.getRowCount());
            for (int row = 0; row < batch.numRows(); row++) {
              Map<String, Object> out = new LinkedHashMap<>();
              for (String column : schema.names()) {
                int c = read.fieldIndex(column);
                out.put(column, sparkValue(batch.getRow(row), c, read.fields()[c].dataType()));
              }
              got.add(new ObjectMapper().valueToTree(out).toString());
            }
          }
        }
      }
      List<String> expected = new ArrayList<>();
      vectors.get("rows").forEach(row -> expected.add(row.toString()));
      assertEquals(expected.subList(skipped, expected.size()), got);
    }
  }

  /** A Spark value as JSON would hold it: lists as lists, structs as maps of their fields. */
  private static Object sparkValue(SpecializedGetters from, int i, DataType type) {
    if (from.isNullAt(i)) {
      return null;
    }
    if (type instanceof ArrayType array) {
      ArrayData items = from.getArray(i);
      List<Object> out = new ArrayList<>();
      for (int j = 0; j < items.numElements(); j++) {
        out.add(sparkValue(items, j, array.elementType()));
      }
      return out;
    }
    if (type instanceof StructType struct) {
      InternalRow row = from.getStruct(i, struct.size());
      Map<String, Object> out = new LinkedHashMap<>();
      for (int k = 0; k < struct.size(); k++) {
        out.put(struct.fields()[k].name(), sparkValue(row, k, struct.fields()[k].dataType()));
      }
      return out;
    }
    return switch (type.typeName()) {
      case "long" -> from.getLong(i);
      case "integer" -> from.getInt(i);
      case "string" -> from.getUTF8String(i).toString();
      default -> throw new AssertionError("no case for " + type);
    };
  }

  /** The batch's rows are {@code rows[from..]}, column by column as Spark reads them. */
  private static void assertRows(TopicSchema schema, StructType read, JsonNode rows, int from, ColumnarBatch batch) {
    List<String> user = schema.names();
    for (int r = 0; r < batch.numRows(); r++) {
      JsonNode row = rows.get(from + r);
      for (int c = 0; c < read.fields().length; c++) {
        StructField f = read.fields()[c];
        ColumnVector col = batch.column(c);
        String where = f.name() + " row " + (from + r);
        switch (f.name()) {
          case "topic", "partition", "offset" -> { }
          case "timestamp" -> assertEquals(row.get("timestamp").asLong(), col.getLong(r), where);
          case "headers" -> {
            JsonNode h = row.get("headers");
            if (h.isNull()) {
              assertTrue(col.isNullAt(r), where);
            } else {
              assertEquals(h.asInt(), col.getArray(r).numElements(), where);
            }
          }
          default -> {
            JsonNode x = row.get(f.name());
            if (x.isNull()) {
              assertTrue(col.isNullAt(r), where);
            } else {
              String arrow = f.name().equals("key") ? "binary" : schema.typeName(user.indexOf(f.name()));
              assertEquals(expected(x, f.dataType(), arrow), Vectors.cell(col, r, f.dataType()), where);
            }
          }
        }
      }
    }
  }

  /** The vector's JSON value (timestamps in their column's unit) as {@link #actual} reads it. */
  private static Object expected(JsonNode x, DataType type, String arrow) {
    return switch (type.typeName()) {
      case "binary" -> x.asText();
      case "timestamp", "timestamp_ntz" -> arrow.startsWith("timestamp[s") ? x.asLong() * 1_000_000
          : arrow.startsWith("timestamp[ms") ? x.asLong() * 1000
          : arrow.startsWith("timestamp[ns") ? x.asLong() / 1000 : x.asLong();
      case "float" -> (float) x.asDouble();
      case "double" -> x.asDouble();
      case "boolean" -> x.asBoolean();
      case "string" -> x.asText();
      default -> type instanceof DecimalType ? new BigDecimal(x.asText()) : x.asLong();
    };
  }
}

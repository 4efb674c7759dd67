package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import io.sparkstream.fluvio.records.RecordSchema;
import io.sparkstream.fluvio.records.TopicSchema;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.VersionParser;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReaderImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * Reads one tier file (a manifest entry) into Arrow roots of {@link RecordSchema#SCHEMA},
 * the schema of a decoded batch frame, so tier rows go through the same {@code
 * FrameColumns} as SPU rows. Column by column, straight from parquet-column's readers into
 * the Arrow vectors: no row objects, and at most {@code maxRows} rows in memory at once.
 *
 * <p>The column mapping lives here and only here: Parquet's {@code offset} (checked against
 * the manifest: the file's rows are exactly {@code [base_offset, next_offset)}, in order),
 * {@code key}, {@code value}, {@code timestamp} (microseconds, UTC) and {@code headers}
 * (a list of {@code key}/{@code value} structs, as pyarrow writes it: three-level LIST) go
 * to the vectors of the same names. A file that lacks a column or holds another type is a
 * {@code CORRUPT_FRAME}, as in Python ({@code reader.read_entry}).
 *
 * <p>A typed topic's file (tiering writes the topic's storage columns as they were when
 * the segment was tiered: its user columns, then {@code key}, {@code timestamp}, {@code
 * headers}, no {@code value}) reads into the storage schema of the file's version: the
 * latest schema's user columns the file holds, each by {@link TierColumn}, then the record
 * columns above. A column added after the file was written has no vector, as in an older
 * SPU frame, so {@code FrameColumns} reads it as null.
 */
public final class TierFileReader implements AutoCloseable {
  private static final PrimitiveConverter NO_CONVERTER = new PrimitiveConverter() {};

  private final String url;
  private final TierEntry entry;
  private final ParquetFileReader file;
  private final MessageType schema;
  private final VersionParser.ParsedVersion writer;
  private final Schema rootSchema;
  private final List<TierColumn> userColumns = new ArrayList<>();
  private final ColumnDescriptor offsetColumn;
  private final ColumnDescriptor keyColumn;
  private final ColumnDescriptor valueColumn;
  private final ColumnDescriptor timestampColumn;
  private final ColumnDescriptor headerKeyColumn;
  private final ColumnDescriptor headerValueColumn;
  private final long timestampScale;
  private final int headersDefined;
  private final int headersNonEmpty;
  private final int headerDefined;
  private int group;
  private long groupRowsLeft;
  private ColumnReader offsets;
  private ColumnReader keys;
  private ColumnReader values;
  private ColumnReader timestamps;
  private TierColumn.Values[] userValues;
  private Leaf headerKeys;
  private Leaf headerValues;
  private long nextOffset;

  /** A leaf column of a repeated field, with the count of values left in the row group. */
  private static final class Leaf {
    final ColumnReader reader;
    long left;

    Leaf(ColumnReader reader) {
      this.reader = reader;
      this.left = reader.getTotalValueCount();
    }
  }

  private TierFileReader(String tierUrl, TierEntry entry, TopicSchema topic, Configuration conf)
      throws IOException {
    this.url = TierFiles.join(tierUrl, entry.file());
    this.entry = entry;
    this.file = ParquetFileReader.open(HadoopInputFile.fromPath(TierFiles.path(url), conf));
    try {
      this.schema = file.getFooter().getFileMetaData().getSchema();
      this.writer = version(file.getFooter().getFileMetaData().getCreatedBy());
      long rows = file.getRowGroups().stream().mapToLong(BlockMetaData::getRowCount).sum();
      if (rows != entry.records()) {
        throw corrupt("%s has %d rows, its manifest says %d".formatted(url, rows, entry.records()));
      }
      offsetColumn = leaf(Type.Repetition.REQUIRED, "offset");
      keyColumn = leaf(Type.Repetition.OPTIONAL, "key");
      valueColumn = topic == null ? leaf(null, "value") : null;
      rootSchema = topic == null ? RecordSchema.SCHEMA : typedSchema(topic);
      timestampColumn = leaf(null, "timestamp");
      timestampScale = timestampScale();
      GroupType headers = group(schema, "headers");
      GroupType repeated = group(headers, headers.getFieldName(0));
      GroupType element = group(repeated, repeated.getFieldName(0));
      String[] at = {"headers", repeated.getName(), element.getName()};
      headerKeyColumn = leaf(null, at[0], at[1], at[2], "key");
      headerValueColumn = leaf(Type.Repetition.OPTIONAL, at[0], at[1], at[2], "value");
      headersDefined = schema.getMaxDefinitionLevel(at[0]);
      headersNonEmpty = schema.getMaxDefinitionLevel(at[0], at[1]);
      headerDefined = schema.getMaxDefinitionLevel(at);
    } catch (RuntimeException e) {
      file.close();
      throw e;
    }
    this.nextOffset = entry.baseOffset();
  }

  /** The storage columns of a typed topic's file: its user columns of {@code topic}, then the record columns. */
  private Schema typedSchema(TopicSchema topic) {
    List<Field> fields = new ArrayList<>();
    List<Field> user = topic.userSchema().getFields();
    for (int i = 0; i < user.size(); i++) {
      Field f = user.get(i);
      if (schema.containsField(f.getName())) {
        userColumns.add(TierColumn.of(url, schema, f, topic.typeName(i)));
        fields.add(f);
      }
    }
    for (String name : TopicSchema.SYSTEM) {
      fields.add(RecordSchema.SCHEMA.findField(name));
    }
    return new Schema(fields);
  }

  /**
   * Open the file of {@code entry} of an untyped topic.
   *
   * @param tierUrl the topic's tier directory
   * @param entry the manifest entry
   * @param conf the Hadoop configuration to open the file with
   * @return a reader positioned at the entry's first record
   * @throws FluvioException {@code STORAGE}: the file cannot be read; {@code CORRUPT_FRAME}:
   *     it does not hold the entry's rows or the record columns
   */
  public static TierFileReader open(String tierUrl, TierEntry entry, Configuration conf) {
    return open(tierUrl, entry, null, conf);
  }

  /**
   * Open the file of {@code entry}.
   *
   * @param tierUrl the topic's tier directory
   * @param entry the manifest entry
   * @param topic the typed topic's latest schema, null for an untyped topic
   * @param conf the Hadoop configuration to open the file with
   * @return a reader positioned at the entry's first record
   * @throws FluvioException {@code STORAGE}: the file cannot be read; {@code CORRUPT_FRAME}:
   *     it does not hold the entry's rows or the record columns, or a user column has
   *     another type than {@code topic} says; {@code DATA_SOURCE_OPTION}: a user column the
   *     tier reader does not serve (nested deeper than a list or a struct of scalars), named
   */
  public static TierFileReader open(
      String tierUrl, TierEntry entry, TopicSchema topic, Configuration conf) {
    try {
      return new TierFileReader(tierUrl, entry, topic, conf);
    } catch (IOException | RuntimeException e) {
      throw wrap(TierFiles.join(tierUrl, entry.file()), e);
    }
  }

  /** The offset of the next record {@link #next} returns. */
  public long position() {
    return nextOffset;
  }

  /**
   * Skip records without decoding them into vectors (whole row groups unread).
   *
   * @param count records to skip, at most those left
   */
  public void skip(long count) {
    long left = count;
    try {
      while (left > 0) {
        if (groupRowsLeft == 0 && group < file.getRowGroups().size()) {
          long groupRows = file.getRowGroups().get(group).getRowCount();
          if (groupRows <= left) {
            file.skipNextRowGroup();
            group++;
            left -= groupRows;
            nextOffset += groupRows;
            continue;
          }
        }
        int read = read((int) Math.min(left, Integer.MAX_VALUE), null);
        if (read == 0) {
          throw corrupt("%s ends before offset %d".formatted(url, nextOffset + left));
        }
        left -= read;
      }
    } catch (IOException | RuntimeException e) {
      throw wrap(url, e);
    }
  }

  /**
   * The next records, at most {@code maxRows} (fewer at a row group's end), or null at the
   * file's end.
   *
   * @param maxRows most rows to return
   * @param allocator where the vectors live
   * @return a root of {@link RecordSchema#SCHEMA} (a typed topic's: of the file's storage
   *     columns) owned by the caller; its first row's
   *     offset was {@link #position()} before the call
   */
  public VectorSchemaRoot next(int maxRows, BufferAllocator allocator) {
    VectorSchemaRoot root = VectorSchemaRoot.create(rootSchema, allocator);
    try {
      int n = read(maxRows, root);
      if (n == 0) {
        root.close();
        return null;
      }
      return root;
    } catch (IOException | RuntimeException e) {
      root.close();
      throw wrap(url, e);
    }
  }

  /** Read up to {@code maxRows} rows of the current row group (the next one when it is done) into {@code root} (null: discard). */
  private int read(int maxRows, VectorSchemaRoot root) throws IOException {
    if (groupRowsLeft == 0) {
      offsets = null;
      if (group >= file.getRowGroups().size()) {
        return 0;
      }
      PageReadStore pages = file.readNextRowGroup();
      group++;
      groupRowsLeft = pages.getRowCount();
      offsets = column(pages, offsetColumn);
      keys = column(pages, keyColumn);
      values = valueColumn == null ? null : column(pages, valueColumn);
      userValues = new TierColumn.Values[userColumns.size()];
      for (int c = 0; c < userValues.length; c++) {
        userValues[c] = userColumns.get(c).values(d -> column(pages, d));
      }
      timestamps = column(pages, timestampColumn);
      headerKeys = new Leaf(column(pages, headerKeyColumn));
      headerValues = new Leaf(column(pages, headerValueColumn));
    }
    int n = (int) Math.min(maxRows, groupRowsLeft);
    readOffsets(n);
    if (root == null) {
      skipFlat(keys, keyColumn, n);
      if (values != null) {
        skipFlat(values, valueColumn, n);
      }
      skipFlat(timestamps, timestampColumn, n);
      for (TierColumn.Values column : userValues) {
        column.read(n, null);
      }
      readHeaders(n, null);
    } else {
      for (var vector : root.getFieldVectors()) {
        vector.setInitialCapacity(n); // one allocation for the batch, not doublings
      }
      root.allocateNew();
      readBinary(keys, keyColumn, n, (VarBinaryVector) root.getVector("key"));
      if (values != null) {
        readBinary(values, valueColumn, n, (VarBinaryVector) root.getVector("value"));
      }
      for (int c = 0; c < userValues.length; c++) {
        userValues[c].read(n, root.getVector(userColumns.get(c).field.getName()));
      }
      readTimestamps(n, (TimeStampMicroTZVector) root.getVector("timestamp"));
      readHeaders(n, (ListVector) root.getVector("headers"));
      root.setRowCount(n);
    }
    groupRowsLeft -= n;
    return n;
  }

  private void readOffsets(int n) {
    for (int i = 0; i < n; i++) {
      long offset = offsets.getLong();
      offsets.consume();
      if (offset != nextOffset) {
        throw corrupt("%s holds offset %d where its manifest entry [%d, %d) has %d"
            .formatted(url, offset, entry.baseOffset(), entry.nextOffset(), nextOffset));
      }
      nextOffset++;
    }
  }

  private static void skipFlat(ColumnReader column, ColumnDescriptor d, int n) {
    for (int i = 0; i < n; i++) {
      skipValue(column, d);
      column.consume();
    }
  }

  /** Pass over the current value unread (a null has none: its levels are all there is). */
  private static void skipValue(ColumnReader column, ColumnDescriptor d) {
    if (column.getCurrentDefinitionLevel() == d.getMaxDefinitionLevel()) {
      column.skip();
    }
  }

  private static void readBinary(ColumnReader column, ColumnDescriptor d, int n, VarBinaryVector out) {
    int defined = d.getMaxDefinitionLevel();
    for (int i = 0; i < n; i++) {
      if (column.getCurrentDefinitionLevel() == defined) {
        ByteBuffer bytes = column.getBinary().toByteBuffer();
        out.setSafe(i, bytes, bytes.position(), bytes.remaining());
      } else {
        out.setNull(i);
      }
      column.consume();
    }
    out.setValueCount(n);
  }

  private void readTimestamps(int n, TimeStampMicroTZVector out) {
    for (int i = 0; i < n; i++) {
      out.setSafe(i, timestamps.getLong() * timestampScale);
      timestamps.consume();
    }
    out.setValueCount(n);
  }

  /**
   * The headers of {@code n} rows: both leaf columns walk the same levels (repetition 0
   * starts a row; below {@code headersDefined} the list is null, below {@code
   * headersNonEmpty} empty, below {@code headerDefined} an element is null).
   */
  private void readHeaders(int n, ListVector out) {
    StructVector items = out == null ? null : (StructVector) out.getDataVector();
    VarCharVector itemKeys = items == null ? null : (VarCharVector) items.getChild("key");
    VarBinaryVector itemValues = items == null ? null : (VarBinaryVector) items.getChild("value");
    int item = 0;
    for (int row = 0; row < n; row++) {
      int level = headerKeys.reader.getCurrentDefinitionLevel();
      if (level < headersNonEmpty) {
        if (out != null) {
          if (level < headersDefined) {
            out.setNull(row);
          } else {
            out.startNewValue(row);
            out.endValue(row, 0);
          }
        }
        advance(headerKeys);
        advance(headerValues);
        continue;
      }
      if (out != null) {
        out.startNewValue(row);
      }
      int size = 0;
      do {
        if (out != null) {
          put(items, itemKeys, itemValues, item++);
        }
        size++;
        advance(headerKeys);
        advance(headerValues);
      } while (headerKeys.left > 0 && headerKeys.reader.getCurrentRepetitionLevel() > 0);
      if (out != null) {
        out.endValue(row, size);
      }
    }
    if (out != null) {
      items.setValueCount(item);
      out.setValueCount(n);
    }
  }

  private void put(StructVector items, VarCharVector itemKeys, VarBinaryVector itemValues, int item) {
    if (headerKeys.reader.getCurrentDefinitionLevel() < headerDefined) {
      items.setNull(item);
      return;
    }
    items.setIndexDefined(item);
    ByteBuffer key = headerKeys.reader.getBinary().toByteBuffer();
    itemKeys.setSafe(item, key, key.position(), key.remaining());
    if (headerValues.reader.getCurrentDefinitionLevel() == headerValueColumn.getMaxDefinitionLevel()) {
      ByteBuffer value = headerValues.reader.getBinary().toByteBuffer();
      itemValues.setSafe(item, value, value.position(), value.remaining());
    } else {
      itemValues.setNull(item);
    }
  }

  /** Consume the current level of a header leaf, skipping its value when it was not read. */
  private static void advance(Leaf leaf) {
    skipValue(leaf.reader, leaf.reader.getDescriptor());
    leaf.reader.consume();
    leaf.left--;
  }

  private ColumnReader column(PageReadStore pages, ColumnDescriptor d) {
    return new ColumnReaderImpl(d, pages.getPageReader(d), NO_CONVERTER, writer);
  }

  /** The leaf at {@code path}, binary unless it is {@code offset} (int64); {@code repetition} null: any. */
  private ColumnDescriptor leaf(Type.Repetition repetition, String... path) {
    String name = String.join(".", path);
    if (!schema.containsPath(path)) {
      throw corrupt("%s has no column %s".formatted(url, name));
    }
    ColumnDescriptor d = schema.getColumnDescription(path);
    Type.Repetition held = schema.getType(path).getRepetition();
    var expected =
        path.length == 1 && (path[0].equals("offset") || path[0].equals("timestamp"))
            ? org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT64
            : org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.BINARY;
    if (d.getPrimitiveType().getPrimitiveTypeName() != expected
        || (repetition != null && held != repetition && held != Type.Repetition.REQUIRED)) {
      throw corrupt("%s: column %s is %s, not %s".formatted(url, name, d.getPrimitiveType(), expected));
    }
    return d;
  }

  private GroupType group(GroupType parent, String name) {
    if (!parent.containsField(name) || parent.getType(name).isPrimitive()
        || parent.getType(name).asGroupType().getFieldCount() < 1) {
      throw corrupt("%s has no column %s as a list of key/value structs".formatted(url, name));
    }
    return parent.getType(name).asGroupType();
  }

  /** Microseconds per unit of the file's timestamp column. */
  private long timestampScale() {
    LogicalTypeAnnotation type = timestampColumn.getPrimitiveType().getLogicalTypeAnnotation();
    if (type instanceof LogicalTypeAnnotation.TimestampLogicalTypeAnnotation ts) {
      switch (ts.getUnit()) {
        case MILLIS:
          return 1000;
        case MICROS:
          return 1;
        default:
          break;
      }
    }
    throw corrupt("%s: column timestamp is %s, not a timestamp in microseconds".formatted(url, type));
  }

  private static VersionParser.ParsedVersion version(String createdBy) {
    try {
      return createdBy == null ? null : VersionParser.parse(createdBy);
    } catch (VersionParser.VersionParseException | RuntimeException e) {
      return null; // as parquet-mr: an unknown writer only turns off its workarounds
    }
  }

  private static FluvioException corrupt(String message) {
    return new FluvioException(ErrorCode.CORRUPT_FRAME, message);
  }

  private static FluvioException wrap(String url, Exception e) {
    if (e instanceof FluvioException f) {
      return f;
    }
    return new FluvioException(ErrorCode.STORAGE, "cannot read %s: %s".formatted(url, e), e);
  }

  @Override
  public void close() {
    try {
      file.close();
    } catch (IOException e) {
      throw wrap(url, e);
    }
  }
}

package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * One user column of a typed topic's tier file, read from its Parquet leaves ({@link
 * TierLeaf}) straight into the column's Arrow vector. No row objects: a batch's values go
 * from the pages to the vectors.
 *
 * <p>Three shapes, as pyarrow writes them: a scalar column is one leaf; a list of scalars
 * is Parquet's three-level {@code LIST} ({@code <name> (LIST) { repeated group list {
 * element } }}), one leaf whose definition level says null list, empty list, null element
 * or element, and whose repetition level 0 starts a row; a struct of scalars is a group
 * with one leaf per child, each with a value per row, whose definition level says null
 * struct, null child or child. Deeper nesting (lists of structs, structs of lists, maps,
 * large and fixed-size lists) is refused with {@code DATA_SOURCE_OPTION}, naming the
 * column: the Python source reads it.
 */
final class TierColumn {
  private enum Shape {
    SCALAR, LIST, STRUCT
  }

  final Field field;
  private final Shape shape;
  private final List<TierLeaf> leaves;
  private final int defined; // LIST, STRUCT: the definition level from which it is not null
  private final int nonEmpty; // LIST: the definition level from which a row has an element

  private TierColumn(Field field, Shape shape, List<TierLeaf> leaves, int defined, int nonEmpty) {
    this.field = field;
    this.shape = shape;
    this.leaves = leaves;
    this.defined = defined;
    this.nonEmpty = nonEmpty;
  }

  /**
   * The column {@code field} of the file {@code url} whose Parquet schema is {@code schema}
   * (which holds a top-level field of that name).
   *
   * @param typeName the column's type as pyarrow prints it (for messages)
   * @throws FluvioException {@code DATA_SOURCE_OPTION}: a column nested deeper than a list
   *     or a struct of scalars; {@code CORRUPT_FRAME}: the file's column is not what pyarrow
   *     writes for the type
   */
  static TierColumn of(String url, MessageType schema, Field field, String typeName) {
    String name = field.getName();
    ArrowType t = field.getType();
    Type held = schema.getType(name);
    if (t instanceof ArrowType.List) {
      Field element = field.getChildren().get(0);
      if (nested(element.getType())) {
        throw unread(name, typeName);
      }
      String[] path = listElement(url, held, name, typeName);
      TierLeaf leaf = TierLeaf.of(url, schema, path, element.getType(), name, typeName);
      return new TierColumn(field, Shape.LIST, List.of(leaf),
          schema.getMaxDefinitionLevel(name), schema.getMaxDefinitionLevel(path[0], path[1]));
    }
    if (t instanceof ArrowType.Struct) {
      if (held.isPrimitive() || held.getLogicalTypeAnnotation() != null) {
        throw mismatch(url, name, held.toString(), typeName);
      }
      GroupType group = held.asGroupType();
      List<TierLeaf> leaves = new ArrayList<>();
      for (Field child : field.getChildren()) {
        if (nested(child.getType())) {
          throw unread(name, typeName);
        }
        if (!group.containsField(child.getName())) {
          throw mismatch(url, name, held.toString(), typeName);
        }
        String[] path = {name, child.getName()};
        leaves.add(TierLeaf.of(url, schema, path, child.getType(), name, typeName));
      }
      if (leaves.isEmpty()) {
        throw unread(name, typeName);
      }
      return new TierColumn(field, Shape.STRUCT, leaves, schema.getMaxDefinitionLevel(name), 0);
    }
    if (nested(t)) {
      throw unread(name, typeName);
    }
    TierLeaf leaf = TierLeaf.of(url, schema, new String[] {name}, t, name, typeName);
    return new TierColumn(field, Shape.SCALAR, List.of(leaf), 0, 0);
  }

  private static boolean nested(ArrowType t) {
    return t instanceof ArrowType.List || t instanceof ArrowType.Map || t instanceof ArrowType.Struct
        || t instanceof ArrowType.LargeList || t instanceof ArrowType.FixedSizeList
        || t instanceof ArrowType.ListView || t instanceof ArrowType.LargeListView
        || t instanceof ArrowType.Union;
  }

  /** The path of a three-level {@code LIST}'s element leaf ({@code name.<repeated>.<element>}). */
  private static String[] listElement(String url, Type held, String name, String typeName) {
    if (held.isPrimitive()
        || !(held.getLogicalTypeAnnotation() instanceof LogicalTypeAnnotation.ListLogicalTypeAnnotation)
        || held.asGroupType().getFieldCount() != 1) {
      throw mismatch(url, name, held.toString(), typeName);
    }
    Type repeated = held.asGroupType().getType(0);
    if (repeated.isPrimitive() || repeated.getRepetition() != Type.Repetition.REPEATED
        || repeated.asGroupType().getFieldCount() != 1) {
      throw mismatch(url, name, held.toString(), typeName);
    }
    return new String[] {name, repeated.getName(), repeated.asGroupType().getType(0).getName()};
  }

  /** The Parquet leaves of the column, in the order {@link #values} opens them. */
  List<ColumnDescriptor> descriptors() {
    return leaves.stream().map(l -> l.descriptor).toList();
  }

  /**
   * The column's values in one row group.
   *
   * @param open a reader of a leaf's pages in the row group
   */
  Values values(Function<ColumnDescriptor, ColumnReader> open) {
    ColumnReader[] readers = new ColumnReader[leaves.size()];
    for (int i = 0; i < readers.length; i++) {
      readers[i] = open.apply(leaves.get(i).descriptor);
    }
    return new Values(readers);
  }

  /** The column's leaves in one row group, read row by row. */
  final class Values {
    private final ColumnReader[] readers;
    private long left; // LIST: levels left in the row group (the reader has no end mark)

    private Values(ColumnReader[] readers) {
      this.readers = readers;
      this.left = readers[0].getTotalValueCount();
    }

    /**
     * Read the next {@code n} rows into {@code out} from row 0 (its capacity allocated);
     * null {@code out}: skip them.
     */
    void read(int n, FieldVector out) {
      switch (shape) {
        case SCALAR -> readScalar(n, out);
        case LIST -> readList(n, (ListVector) out);
        case STRUCT -> readStruct(n, (StructVector) out);
        default -> throw new IllegalStateException(shape.toString());
      }
      if (out != null) {
        out.setValueCount(n);
      }
    }

    private void readScalar(int n, FieldVector out) {
      TierLeaf leaf = leaves.get(0);
      ColumnReader column = readers[0];
      for (int i = 0; i < n; i++) {
        leaf.put(column, i, out);
        column.consume();
      }
    }

    private void readList(int n, ListVector out) {
      TierLeaf leaf = leaves.get(0);
      ColumnReader column = readers[0];
      FieldVector items = out == null ? null : out.getDataVector();
      int item = 0;
      for (int row = 0; row < n; row++) {
        int level = column.getCurrentDefinitionLevel();
        if (level < nonEmpty) { // a null or an empty list: one level, no value
          if (out != null) {
            if (level < defined) {
              out.setNull(row);
            } else {
              out.startNewValue(row);
              out.endValue(row, 0);
            }
          }
          consume(column);
          continue;
        }
        if (out != null) {
          out.startNewValue(row);
        }
        int size = 0;
        do {
          leaf.put(column, item, items);
          if (items != null) {
            item++;
          }
          size++;
          consume(column);
        } while (left > 0 && column.getCurrentRepetitionLevel() > 0);
        if (out != null) {
          out.endValue(row, size);
        }
      }
      if (items != null) {
        items.setValueCount(item);
      }
    }

    private void consume(ColumnReader column) {
      column.consume();
      left--;
    }

    private void readStruct(int n, StructVector out) {
      for (int row = 0; row < n; row++) {
        boolean present = readers[0].getCurrentDefinitionLevel() >= defined;
        if (out != null) {
          if (present) {
            out.setIndexDefined(row);
          } else {
            out.setNull(row);
          }
        }
        for (int c = 0; c < readers.length; c++) {
          FieldVector child = out == null ? null : (FieldVector) out.getChildByOrdinal(c);
          if (present || child == null) {
            leaves.get(c).put(readers[c], row, child);
          } else if (child instanceof BaseFixedWidthVector fixed) {
            fixed.setNull(row); // a variable-width child fills the hole at its next value
          }
          readers[c].consume();
        }
      }
      if (out != null) {
        for (int c = 0; c < readers.length; c++) {
          out.getChildByOrdinal(c).setValueCount(n);
        }
      }
    }
  }

  static FluvioException unread(String name, String typeName) {
    return new FluvioException(
        ErrorCode.DATA_SOURCE_OPTION,
        ("column %s (%s) of a typed topic is not read from the tier by the JVM connector "
                + "(lists and structs of scalars are): read it through the Python source "
                + "(a session without the connector jar)")
            .formatted(repr(name), typeName));
  }

  static FluvioException mismatch(String url, String name, String held, String typeName) {
    return new FluvioException(
        ErrorCode.CORRUPT_FRAME, "%s: column %s is %s, expected %s".formatted(url, repr(name), held, typeName));
  }

  /** Python's repr of a column name, as the typed read's messages print it. */
  private static String repr(String name) {
    return name.contains("'") && !name.contains("\"") ? "\"" + name + "\"" : "'" + name + "'";
  }
}

package io.sparkstream.fluvio.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tier file of several row groups (written here, in pyarrow's layout): batches larger than
 * Arrow's default vector capacity, row groups skipped whole, and every row's columns and
 * offset right after the skip.
 */
class TierFileRowGroupsTest {
  private static final long BASE = 1_000;
  private static final int ROWS = 60_000;
  private static final MessageType SCHEMA =
      MessageTypeParser.parseMessageType(
          """
          message schema {
            required int64 offset;
            optional binary key;
            required binary value;
            required int64 timestamp (TIMESTAMP(MICROS,true));
            optional group headers (LIST) {
              repeated group list {
                optional group element {
                  required binary key (STRING);
                  optional binary value;
                }
              }
            }
          }
          """);

  @TempDir Path tier;

  private TierEntry write() throws IOException {
    String file = "partition=0/%020d.parquet".formatted(BASE);
    Path path = tier.resolve(file);
    Files.createDirectories(path.getParent());
    SimpleGroupFactory rows = new SimpleGroupFactory(SCHEMA);
    try (ParquetWriter<Group> writer =
        ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(path.toString()))
            .withType(SCHEMA)
            .withRowGroupSize(512 * 1024L)
            .withPageSize(8 * 1024)
            .build()) {
      for (int i = 0; i < ROWS; i++) {
        Group row = rows.newGroup().append("offset", BASE + i);
        if (i % 4 != 0) {
          row.append("key", "k" + i);
        }
        row.append("value", "v" + i).append("timestamp", 1_764_000_000_000_000L + i);
        if (i % 3 == 0) {
          Group list = row.addGroup("headers");
          list.addGroup("list").addGroup("element").append("key", "h").append("value", "x" + i);
          if (i % 2 == 0) {
            list.addGroup("list").addGroup("element").append("key", "n"); // a null value
          }
        }
        writer.write(row);
      }
    }
    return new TierEntry(BASE, BASE + ROWS, ROWS, Files.size(path), file, -1);
  }

  private static String text(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void readsManyRowGroupsAndSkipsWholeOnes() throws IOException {
    TierEntry entry = write();
    try (ParquetFileReader file =
        ParquetFileReader.open(HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(tier.resolve(entry.file()).toString()), new Configuration()))) {
      assertTrue(file.getRowGroups().size() > 2, "row groups: " + file.getRowGroups().size());
    }
    for (long skip : new long[] {0, 41_111}) {
      int seen = 0;
      int largest = 0;
      try (BufferAllocator allocator = new RootAllocator();
          TierFileReader reader = TierFileReader.open(tier.toString(), entry, new Configuration())) {
        reader.skip(skip);
        VectorSchemaRoot root;
        while ((root = reader.next(TierPrefix.MAX_BATCH_ROWS, allocator)) != null) {
          try (VectorSchemaRoot batch = root) {
            VarBinaryVector keys = (VarBinaryVector) batch.getVector("key");
            VarBinaryVector values = (VarBinaryVector) batch.getVector("value");
            TimeStampMicroTZVector ts = (TimeStampMicroTZVector) batch.getVector("timestamp");
            ListVector headers = (ListVector) batch.getVector("headers");
            StructVector items = (StructVector) headers.getDataVector();
            for (int r = 0; r < batch.getRowCount(); r++) {
              int i = (int) (skip + seen + r);
              assertEquals(i % 4 == 0 ? null : "k" + i, text(keys.getObject(r)));
              assertEquals("v" + i, text(values.getObject(r)));
              assertEquals(1_764_000_000_000_000L + i, ts.get(r));
              assertEquals(i % 3 != 0, headers.isNull(r), "row " + i);
              if (i % 3 == 0) {
                int at = headers.getElementStartIndex(r);
                assertEquals(i % 2 == 0 ? 2 : 1, headers.getElementEndIndex(r) - at);
                assertEquals("h", items.getChild("key").getObject(at).toString());
                assertEquals("x" + i, text(((VarBinaryVector) items.getChild("value")).getObject(at)));
                if (i % 2 == 0) {
                  assertEquals("n", items.getChild("key").getObject(at + 1).toString());
                  assertNull(((VarBinaryVector) items.getChild("value")).getObject(at + 1));
                }
              }
            }
            seen += batch.getRowCount();
            largest = Math.max(largest, batch.getRowCount());
          }
        }
        assertEquals(ROWS - skip, seen);
        assertTrue(largest > 4_096, "largest batch: " + largest); // past Arrow's first allocation
        assertEquals(BASE + ROWS, reader.position());
      }
    }
  }
}

package io.sparkstream.fluvio.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkstream.fluvio.Vectors;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.util.SerializableConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tier file written by the SPU's {@code write_parquet} ({@code tier_file.json}) reads back
 * into the frame schema with every record's columns as Python wrote them: whole, in small
 * batches, after a skip; and a file that does not match its manifest entry is refused.
 */
class TierFileReaderTest {
  private static final JsonNode VECTORS = Vectors.load("tier_file.json");
  private static final long BASE = VECTORS.get("base_offset").longValue();
  private static final int COUNT = VECTORS.get("records").size();

  @TempDir Path tier;

  private TierEntry write(long base, long records) throws IOException {
    String file = "partition=0/%020d.parquet".formatted(BASE);
    Path path = tier.resolve(file);
    Files.createDirectories(path.getParent());
    Files.write(path, Vectors.hex(VECTORS.get("parquet")));
    return new TierEntry(base, base + records, records, Files.size(path), file, -1);
  }

  /** The records of the roots, in the vectors' JSON form. */
  private static List<String> rows(List<VectorSchemaRoot> roots) {
    List<String> out = new ArrayList<>();
    for (VectorSchemaRoot root : roots) {
      VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
      VarBinaryVector values = (VarBinaryVector) root.getVector("value");
      TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector("timestamp");
      ListVector headers = (ListVector) root.getVector("headers");
      StructVector items = (StructVector) headers.getDataVector();
      for (int i = 0; i < root.getRowCount(); i++) {
        StringBuilder h = new StringBuilder();
        if (headers.isNull(i)) {
          h.append("null");
        } else {
          h.append('[');
          for (int j = headers.getElementStartIndex(i); j < headers.getElementEndIndex(i); j++) {
            byte[] v = ((VarBinaryVector) items.getChild("value")).getObject(j);
            h.append('[').append(items.getChild("key").getObject(j)).append(',')
                .append(v == null ? "null" : Vectors.hex(v)).append(']');
          }
          h.append(']');
        }
        byte[] key = keys.getObject(i);
        out.add("%s|%s|%d|%s".formatted(key == null ? "null" : Vectors.hex(key), Vectors.hex(values.getObject(i)), ts.get(i), h));
      }
    }
    return out;
  }

  private static List<String> expected(int from) {
    List<String> out = new ArrayList<>();
    for (int i = from; i < COUNT; i++) {
      JsonNode r = VECTORS.get("records").get(i);
      StringBuilder h = new StringBuilder();
      if (r.get("headers").isNull()) {
        h.append("null");
      } else {
        h.append('[');
        for (JsonNode kv : r.get("headers")) {
          h.append('[').append(kv.get(0).asText()).append(',')
              .append(kv.get(1).isNull() ? "null" : kv.get(1).asText()).append(']');
        }
        h.append(']');
      }
      out.add("%s|%s|%d|%s".formatted(r.get("key").isNull() ? "null" : r.get("key").asText(),
          r.get("value").asText(), r.get("timestamp_us").longValue(), h));
    }
    return out;
  }

  private List<String> readAll(TierEntry entry, long skip, int maxRows) {
    List<VectorSchemaRoot> roots = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        TierFileReader reader = TierFileReader.open(tier.toString(), entry, new Configuration())) {
      reader.skip(skip);
      assertEquals(BASE + skip, reader.position());
      VectorSchemaRoot root;
      while ((root = reader.next(maxRows, allocator)) != null) {
        assertTrue(root.getRowCount() <= maxRows);
        roots.add(root);
      }
      assertEquals(BASE + COUNT, reader.position());
      List<String> rows = rows(roots);
      roots.forEach(VectorSchemaRoot::close);
      assertNull(reader.next(maxRows, allocator));
      return rows;
    }
  }

  @Test
  void readsEveryColumnAsPythonWroteIt() throws IOException {
    TierEntry entry = write(BASE, COUNT);
    assertEquals(expected(0), readAll(entry, 0, 1000));
    assertEquals(expected(0), readAll(entry, 0, 7));
  }

  @Test
  void skipsToAnOffsetInsideTheFile() throws IOException {
    TierEntry entry = write(BASE, COUNT);
    assertEquals(expected(13), readAll(entry, 13, 5));
    assertEquals(expected(COUNT - 1), readAll(entry, COUNT - 1, 5));
  }

  @Test
  void aFileThatIsNotItsEntryIsCorrupt() throws IOException {
    FluvioException rows = assertThrows(FluvioException.class, () -> TierFileReader.open(tier.toString(), write(BASE, COUNT + 1), new Configuration()));
    assertEquals(ErrorCode.CORRUPT_FRAME, rows.code());
    assertTrue(rows.getMessage().endsWith("has %d rows, its manifest says %d".formatted(COUNT, COUNT + 1)), rows.getMessage());

    TierEntry shifted = write(BASE - 1, COUNT);
    try (BufferAllocator allocator = new RootAllocator();
        TierFileReader reader = TierFileReader.open(tier.toString(), shifted, new Configuration())) {
      FluvioException e = assertThrows(FluvioException.class, () -> reader.next(10, allocator));
      assertEquals(ErrorCode.CORRUPT_FRAME, e.code());
      assertTrue(e.getMessage().contains("holds offset %d where its manifest entry [%d, %d) has %d"
          .formatted(BASE, BASE - 1, BASE - 1 + COUNT, BASE - 1)), e.getMessage());
    }
  }

  @Test
  void aMissingFileIsAStorageError() {
    TierEntry entry = new TierEntry(0, 5, 5, 1, "partition=0/00000000000000000000.parquet", -1);
    FluvioException e = assertThrows(FluvioException.class, () -> TierFileReader.open(tier.toString(), entry, new Configuration()));
    assertEquals(ErrorCode.STORAGE, e.code());
    assertTrue(e.getMessage().startsWith("cannot read " + tier + "/partition=0/00000000000000000000.parquet"), e.getMessage());
  }

  @Test
  void aMissingManifestIsEmptyAndABadOneIsAStorageError() throws IOException {
    assertEquals(TierManifest.empty(2), TierFiles.loadManifest(tier.toString(), 2, new Configuration()));
    Path manifest = tier.resolve("_fluvio/partition=2.json");
    Files.createDirectories(manifest.getParent());
    Files.writeString(manifest, "{\"version\": 1, \"partition\": 3, \"files\": []}", StandardCharsets.UTF_8);
    FluvioException e = assertThrows(FluvioException.class, () -> TierFiles.loadManifest(tier + "/", 2, new Configuration()));
    assertEquals(ErrorCode.STORAGE, e.code());
    assertEquals(tier + "/_fluvio/partition=2.json is the manifest of partition 3", e.getMessage());
  }

  /**
   * A configuration that maps the scheme {@code tiertest:} onto the local file system, as
   * a session would with {@code spark.hadoop.fs.tiertest.impl} and friends (Hadoop's
   * overload-scheme view file system, falling back to {@code file:///}; no cache, so every
   * lookup asks the configuration it is given).
   */
  static Configuration tiertestScheme() {
    Configuration conf = new Configuration();
    conf.set("fs.tiertest.impl", "org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme");
    conf.set("fs.tiertest.impl.disable.cache", "true");
    conf.set("fs.viewfs.overload.scheme.target.file.impl", "org.apache.hadoop.fs.LocalFileSystem");
    conf.set("fs.viewfs.mounttable.default.linkFallback", "file:///");
    return conf;
  }

  @Test
  void theConfigurationShippedToExecutorsOpensTheTier() throws Exception {
    TierEntry entry = write(BASE, COUNT);
    String url = "tiertest://" + tier;
    // the factories carry it as Spark's SerializableConfiguration: Java serialization, as a task
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(new SerializableConfiguration(tiertestScheme()));
    }
    Configuration shipped;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      shipped = ((SerializableConfiguration) in.readObject()).value();
    }
    try (TierFileReader reader = TierFileReader.open(url, entry, shipped);
        BufferAllocator allocator = new RootAllocator()) {
      try (VectorSchemaRoot root = reader.next(COUNT, allocator)) {
        assertEquals(COUNT, root.getRowCount());
      }
    }
    assertEquals(TierManifest.empty(0), TierFiles.loadManifest(url, 0, shipped));
    // without the settings Hadoop knows no such scheme: a storage error naming it
    FluvioException e = assertThrows(FluvioException.class, () -> TierFileReader.open(url, entry, new Configuration()));
    assertEquals(ErrorCode.STORAGE, e.code());
    assertTrue(e.getMessage().contains("No FileSystem for scheme \"tiertest\""), e.getMessage());
  }
}

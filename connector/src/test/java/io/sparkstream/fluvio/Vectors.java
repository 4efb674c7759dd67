package io.sparkstream.fluvio;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * The shared test vectors written by {@code python -m tests.vectors.generate} into {@code
 * tests/vectors/data} (the path comes from the {@code fluvio.vectors} system property that
 * the pom sets), and helpers to turn their JSON into Java values.
 */
public final class Vectors {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Vectors() {}

  /**
   * One vector file, parsed.
   *
   * @param name e.g. {@code batch_frames.json}
   * @return its JSON tree
   */
  public static JsonNode load(String name) {
    String dir = System.getProperty("fluvio.vectors", "../tests/vectors/data");
    try {
      return JSON.readTree(Path.of(dir, name).toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Bytes of a hex string. */
  public static byte[] hex(JsonNode node) {
    return HexFormat.of().parseHex(node.asText());
  }

  /** Hex of bytes. */
  public static String hex(byte[] data) {
    return HexFormat.of().formatHex(data);
  }

  /**
   * One cell of a Spark column as the vectors write it: binary as hex, integers (and
   * dates, timestamps) as long, decimals as {@code BigDecimal}.
   */
  public static Object cell(ColumnVector col, int row, DataType type) {
    return switch (type.typeName()) {
      case "binary" -> hex(col.getBinary(row));
      case "float" -> col.getFloat(row);
      case "double" -> col.getDouble(row);
      case "boolean" -> col.getBoolean(row);
      case "string" -> col.getUTF8String(row).toString();
      case "byte" -> (long) col.getByte(row);
      case "short" -> (long) col.getShort(row);
      case "integer", "date" -> (long) col.getInt(row);
      default -> type instanceof DecimalType d
          ? col.getDecimal(row, d.precision(), d.scale()).toJavaBigDecimal()
          : col.getLong(row);
    };
  }

  /**
   * A meta value of the vectors (bytes and timestamps tagged) as the Java value {@code
   * Meta.encode} takes and {@code Meta.decode} gives.
   */
  public static Object metaValue(JsonNode node) {
    if (node.isNull()) {
      return null;
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    if (node.isIntegralNumber()) {
      BigInteger big = node.bigIntegerValue();
      return big.bitLength() <= 63 ? (Object) big.longValue() : big;
    }
    if (node.isFloatingPointNumber()) {
      return node.doubleValue();
    }
    if (node.isTextual()) {
      return node.textValue();
    }
    if (node.isArray()) {
      List<Object> list = new ArrayList<>();
      node.forEach(item -> list.add(metaValue(item)));
      return list;
    }
    if (node.has("$bytes")) {
      return hex(node.get("$bytes"));
    }
    if (node.has("$timestamp_us")) {
      long us = node.get("$timestamp_us").longValue();
      return Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000), Math.floorMod(us, 1_000_000) * 1000L);
    }
    Map<String, Object> map = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = node.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      map.put(e.getKey(), metaValue(e.getValue()));
    }
    return map;
  }

  /** A value with every {@code byte[]} replaced by its hex, for {@code assertEquals}. */
  public static Object comparable(Object value) {
    if (value instanceof byte[] bytes) {
      return "bytes:" + hex(bytes);
    }
    if (value instanceof List<?> list) {
      List<Object> out = new ArrayList<>();
      list.forEach(item -> out.add(comparable(item)));
      return out;
    }
    if (value instanceof Map<?, ?> map) {
      Map<Object, Object> out = new LinkedHashMap<>();
      map.forEach((k, v) -> out.put(k, comparable(v)));
      return out;
    }
    return value;
  }
}

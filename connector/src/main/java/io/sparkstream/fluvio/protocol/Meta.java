package io.sparkstream.fluvio.protocol;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.core.buffer.ByteBufferInput;
import org.msgpack.value.ValueType;

/**
 * The meta map of a frame as msgpack, byte-identical to {@code
 * spark_stream/protocol/meta.py} (Python's {@code msgpack.packb(meta, use_bin_type=True,
 * datetime=True)}).
 *
 * <p>Meta is always a map with string keys, in insertion order. Java values map to msgpack
 * as Python's do: {@code null} nil, {@link Boolean} bool, integral numbers the smallest
 * int format (a {@link BigInteger} up to 2^64-1), {@link Double}/{@link Float} float64,
 * {@link String} str (UTF-8, smallest header), {@code byte[]} bin, {@link Instant} a
 * msgpack timestamp (Python's timezone-aware datetime), {@link List} array and {@link Map}
 * map. Decoding gives {@link Long} (or {@link BigInteger} above {@code Long.MAX_VALUE}),
 * {@link Double}, {@link String}, {@code byte[]}, {@link Instant}, {@link ArrayList} and
 * {@link LinkedHashMap}; other extension types are refused, as in Python.
 */
public final class Meta {
  private Meta() {}

  /**
   * Encode a meta map.
   *
   * @param meta the fields, in wire order
   * @return the msgpack bytes
   * @throws FluvioException {@code INVALID_REQUEST}: a value msgpack cannot encode
   */
  public static byte[] encode(Map<String, ?> meta) {
    try (MessageBufferPacker packer = MessagePack.newDefaultBufferPacker()) {
      pack(packer, meta);
      return packer.toByteArray();
    } catch (IOException e) {
      throw invalid("meta cannot be encoded as msgpack: " + e.getMessage());
    }
  }

  private static void pack(MessageBufferPacker p, Object v) throws IOException {
    if (v == null) {
      p.packNil();
    } else if (v instanceof Boolean b) {
      p.packBoolean(b);
    } else if (v instanceof Long || v instanceof Integer || v instanceof Short
        || v instanceof Byte) {
      p.packLong(((Number) v).longValue());
    } else if (v instanceof BigInteger big) {
      if (big.signum() < 0 ? big.bitLength() > 63 : big.bitLength() > 64) {
        throw invalid("meta cannot be encoded as msgpack: integer out of range: " + big);
      }
      p.packBigInteger(big);
    } else if (v instanceof Double || v instanceof Float) {
      p.packDouble(((Number) v).doubleValue());
    } else if (v instanceof String s) {
      // Always through bytes: msgpack-java's encoder may pick a wider header than
      // needed for long strings, Python never does.
      byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
      p.packRawStringHeader(utf8.length);
      p.writePayload(utf8);
    } else if (v instanceof byte[] bytes) {
      p.packBinaryHeader(bytes.length);
      p.writePayload(bytes);
    } else if (v instanceof Instant t) {
      p.packTimestamp(t);
    } else if (v instanceof List<?> list) {
      p.packArrayHeader(list.size());
      for (Object item : list) {
        pack(p, item);
      }
    } else if (v instanceof Map<?, ?> map) {
      p.packMapHeader(map.size());
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!(e.getKey() instanceof String)) {
          throw invalid("meta keys must be strings, got " + e.getKey());
        }
        pack(p, e.getKey());
        pack(p, e.getValue());
      }
    } else {
      throw invalid(
          "meta cannot be encoded as msgpack: can not serialize '%s' object"
              .formatted(v.getClass().getSimpleName()));
    }
  }

  /**
   * Decode meta bytes; empty bytes decode to an empty map.
   *
   * @param buf the msgpack bytes, from position to limit (not consumed)
   * @return the fields, in wire order
   * @throws FluvioException {@code INVALID_REQUEST}: not one msgpack map with string keys
   */
  public static Map<String, Object> decode(ByteBuffer buf) {
    if (!buf.hasRemaining()) {
      return new LinkedHashMap<>();
    }
    try (MessageUnpacker u = MessagePack.newDefaultUnpacker(new ByteBufferInput(buf.duplicate()))) {
      if (u.getNextFormat().getValueType() != ValueType.MAP) {
        throw invalid(
            "meta must be a msgpack map, got "
                + u.getNextFormat().getValueType().name().toLowerCase(java.util.Locale.ROOT));
      }
      Object value = unpack(u);
      if (u.hasNext()) {
        throw invalid("malformed msgpack meta: extra data");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> meta = (Map<String, Object>) value;
      return meta;
    } catch (IOException | MessagePackException e) {
      throw invalid("malformed msgpack meta: " + e.getMessage());
    }
  }

  private static Object unpack(MessageUnpacker u) throws IOException {
    MessageFormat format = u.getNextFormat();
    switch (format.getValueType()) {
      case NIL:
        u.unpackNil();
        return null;
      case BOOLEAN:
        return u.unpackBoolean();
      case INTEGER:
        if (format == MessageFormat.UINT64) {
          BigInteger big = u.unpackBigInteger();
          return big.bitLength() <= 63 ? (Object) big.longValue() : big;
        }
        return u.unpackLong();
      case FLOAT:
        return u.unpackDouble();
      case STRING:
        return u.unpackString();
      case BINARY:
        return u.readPayload(u.unpackBinaryHeader());
      case ARRAY:
        {
          int n = u.unpackArrayHeader();
          List<Object> list = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            list.add(unpack(u));
          }
          return list;
        }
      case MAP:
        {
          int n = u.unpackMapHeader();
          Map<String, Object> map = new LinkedHashMap<>();
          for (int i = 0; i < n; i++) {
            if (u.getNextFormat().getValueType() != ValueType.STRING) {
              throw invalid("meta keys must be strings, got " + unpack(u));
            }
            String key = u.unpackString();
            map.put(key, unpack(u));
          }
          return map;
        }
      case EXTENSION:
        {
          var ext = u.unpackExtensionTypeHeader();
          if (ext.isTimestampType()) {
            return u.unpackTimestamp(ext);
          }
          throw invalid("msgpack extension type %d is not allowed in meta".formatted(ext.getType()));
        }
      default:
        throw invalid("malformed msgpack meta: unexpected " + format);
    }
  }

  private static FluvioException invalid(String message) {
    return new FluvioException(ErrorCode.INVALID_REQUEST, message);
  }
}

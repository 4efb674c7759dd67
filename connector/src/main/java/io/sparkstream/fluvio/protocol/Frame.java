package io.sparkstream.fluvio.protocol;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * One whole protocol frame: its header, the undecoded meta bytes and the raw tail, both
 * slices of the received buffer (Python's {@code Frame}).
 *
 * @param header the parsed header
 * @param meta the msgpack meta bytes
 * @param tail the raw tail (batch frames), possibly empty
 */
public record Frame(FrameHeader header, ByteBuffer meta, ByteBuffer tail) {

  /** The meta decoded (see {@link Meta#decode}). */
  public Map<String, Object> decodeMeta() {
    return Meta.decode(meta);
  }
}

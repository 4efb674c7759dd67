package io.sparkstream.fluvio.records;

import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

/** A readable channel over a byte buffer, for Arrow's {@code ReadChannel}. */
final class ByteBufferChannel implements ReadableByteChannel {
  private final ByteBuffer source;
  private boolean open = true;

  ByteBufferChannel(ByteBuffer source) {
    this.source = source.duplicate();
  }

  @Override
  public int read(ByteBuffer dst) {
    if (!source.hasRemaining()) {
      return -1;
    }
    int n = Math.min(dst.remaining(), source.remaining());
    dst.put(source.duplicate().limit(source.position() + n));
    source.position(source.position() + n);
    return n;
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public void close() {
    open = false;
  }
}

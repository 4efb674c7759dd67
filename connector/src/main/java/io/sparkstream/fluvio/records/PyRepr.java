package io.sparkstream.fluvio.records;

/**
 * Python's {@code repr} of a few values, so that error messages built from bytes read
 * the same in Java as in Python (e.g. {@code bad magic b'FLVX' at byte 0}).
 */
final class PyRepr {
  private PyRepr() {}

  /**
   * {@code repr(bytes)}: {@code b'...'} with printable ASCII as is and the rest escaped.
   *
   * @param data the bytes
   * @return the text Python prints for them
   */
  static String bytes(byte[] data) {
    boolean hasSingle = false;
    boolean hasDouble = false;
    for (byte b : data) {
      hasSingle |= b == '\'';
      hasDouble |= b == '"';
    }
    char quote = hasSingle && !hasDouble ? '"' : '\'';
    StringBuilder out = new StringBuilder("b").append(quote);
    for (byte b : data) {
      int c = b & 0xFF;
      if (c == quote || c == '\\') {
        out.append('\\').append((char) c);
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c < 0x20 || c >= 0x7F) {
        out.append(String.format("\\x%02x", c));
      } else {
        out.append((char) c);
      }
    }
    return out.append(quote).toString();
  }

  /**
   * Python's {@code f"{n:#010x}"}: {@code 0x} and at least 8 lowercase hex digits.
   *
   * @param n a non-negative value
   * @return the text
   */
  static String hex8(long n) {
    return String.format("0x%08x", n);
  }
}

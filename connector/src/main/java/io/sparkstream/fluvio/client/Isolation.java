package io.sparkstream.fluvio.client;

/** Which records a read sees: committed (up to the HW) or uncommitted (up to the LEO). */
public enum Isolation {
  COMMITTED,
  UNCOMMITTED;

  /** The wire value ({@code committed} / {@code uncommitted}). */
  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}

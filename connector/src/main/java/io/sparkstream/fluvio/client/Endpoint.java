package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.Serializable;

/**
 * A {@code host:port} address ({@code "[v6]:port"} for IPv6), parsed by the rule of {@code
 * spark_stream/net/endpoint.py}, with its message.
 *
 * @param host the host name or address, without brackets
 * @param port the port, 1..65535
 */
public record Endpoint(String host, int port) implements Serializable {

  /**
   * Parse an endpoint.
   *
   * @param text the endpoint as written
   * @param what how errors name it, e.g. {@code "option 'endpoint'"}
   * @return the endpoint
   * @throws FluvioException {@code INVALID_CONFIG}: no host, no port, a bad port, or an
   *     IPv6 literal without brackets
   */
  public static Endpoint parse(String text, String what) {
    String s = text.strip();
    int colon = s.lastIndexOf(':');
    String host = colon < 0 ? "" : s.substring(0, colon);
    String port = colon < 0 ? "" : s.substring(colon + 1);
    boolean bracketed = host.startsWith("[") && host.endsWith("]");
    if (bracketed) {
      host = host.substring(1, host.length() - 1);
    }
    boolean valid =
        colon >= 0
            && !host.isEmpty()
            && !port.isEmpty()
            && port.chars().allMatch(Character::isDigit)
            && port.length() <= 5
            && Integer.parseInt(port) > 0
            && Integer.parseInt(port) < 65536
            && (bracketed || !host.contains(":"))
            && host.chars().noneMatch(c -> "[] /".indexOf(c) >= 0);
    if (!valid) {
      throw new FluvioException(
          ErrorCode.INVALID_CONFIG,
          "%s must be 'host:port' (IPv6: '[::1]:port'), got '%s'".formatted(what, text));
    }
    return new Endpoint(host, Integer.parseInt(port));
  }

  @Override
  public String toString() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }
}

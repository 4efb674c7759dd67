package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code host:port} address ({@code "[v6]:port"} for IPv6), parsed by the rule of {@code
 * spark_stream/net/endpoint.py}, with its message, and how to speak to it: plaintext, or
 * TLS with {@code tls} (every connection to it and to the SPUs its metadata names).
 *
 * @param host the host name or address, without brackets
 * @param port the port, 1..65535
 * @param tls TLS settings; null: plaintext
 * @param others further SC addresses of the same cluster to try, in order, when this one
 *     does not answer (the rest of a comma-separated list, see {@link ScEndpoints}); empty
 *     for an SPU or a single SC
 */
public record Endpoint(String host, int port, TlsSettings tls, List<Endpoint> others)
    implements Serializable {

  /** Checks the components; {@code others} is copied (null: none). */
  public Endpoint {
    others = others == null ? List.of() : List.copyOf(others);
  }

  /** An endpoint with no others. */
  public Endpoint(String host, int port, TlsSettings tls) {
    this(host, port, tls, List.of());
  }

  /** A plaintext endpoint. */
  public Endpoint(String host, int port) {
    this(host, port, null);
  }

  /** This address and its others, all spoken to with {@code settings} (null: plaintext). */
  public Endpoint withTls(TlsSettings settings) {
    List<Endpoint> rest = new ArrayList<>();
    for (Endpoint other : others) {
      rest.add(new Endpoint(other.host, other.port, settings));
    }
    return new Endpoint(host, port, settings, rest);
  }

  /** This address then its others: every SC address to try, in order. */
  public List<Endpoint> addresses() {
    List<Endpoint> all = new ArrayList<>();
    all.add(new Endpoint(host, port, tls));
    all.addAll(others);
    return all;
  }

  /** Every address, comma-separated, as an {@code endpoint} option lists them. */
  public String listed() {
    return String.join(",", addresses().stream().map(Endpoint::toString).toList());
  }

  /** True when {@code other} is the same host and port, whatever the TLS. */
  public boolean sameAddress(Endpoint other) {
    return other != null && host.equals(other.host) && port == other.port;
  }

  /** How a standby SC names the active one ({@code spark_stream/net/sc_endpoints.py}). */
  private static final Pattern ACTIVE = Pattern.compile("active SC: public=(\\S+) private=(\\S+)");

  /**
   * A comma-separated list of SC endpoints ({@code parse_endpoints} of {@code
   * spark_stream/net/sc_endpoints.py}): a cluster with standby SCs lists them all. The
   * first is returned, the rest as its {@link #others} (duplicates dropped), and the SC
   * connection tries them in turn ({@link ScEndpoints}).
   *
   * @param text one endpoint, or several separated by commas
   * @param what how errors name it
   * @return the first endpoint, each having been checked, the rest as its others
   * @throws FluvioException {@code INVALID_CONFIG}: a malformed entry, or none
   */
  public static Endpoint list(String text, String what) {
    List<Endpoint> all = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      if (!part.isBlank()) {
        Endpoint endpoint = parse(part, what);
        if (!all.contains(endpoint)) {
          all.add(endpoint);
        }
      }
    }
    if (all.isEmpty()) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "%s names no endpoint: '%s'".formatted(what, text));
    }
    Endpoint first = all.get(0);
    return new Endpoint(first.host, first.port, first.tls, all.subList(1, all.size()));
  }

  /**
   * The active SC's public endpoint that a standby's {@code NOT_ACTIVE} error names.
   *
   * @param error an error from the SC
   * @return the endpoint, or null when the error is another or names none
   */
  public static Endpoint activeSc(FluvioException error) {
    if (error.code() != ErrorCode.NOT_ACTIVE || error.getMessage() == null) {
      return null;
    }
    Matcher m = ACTIVE.matcher(error.getMessage());
    if (!m.find()) {
      return null;
    }
    try {
      return parse(m.group(1), "the active SC");
    } catch (FluvioException e) {
      return null;
    }
  }

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

  /** {@code host:port} of this address alone (its others are not named). */
  @Override
  public String toString() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }
}

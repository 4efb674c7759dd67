package io.sparkstream.fluvio.datasource;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkstream.fluvio.client.Endpoint;
import io.sparkstream.fluvio.client.TlsSettings;
import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The SC endpoint from the client profile, the last step of {@code resolve_endpoint} in
 * {@code spark_stream/client/profile.py} (after the {@code endpoint} option and {@code
 * FLUVIO_ENDPOINT}): the JSON file {@code $FLUVIO_PROFILE}, else {@code
 * ~/.fluvio/profile.json}, that {@code fluvio cluster start} writes: named profiles and the
 * current one's name ({@code {"current": "local", "profiles": {"local": {"endpoint": ...}}}}),
 * or the earlier single profile ({@code {"endpoint": ...}}). Read on the driver when the scan
 * is built, with Python's error types and messages.
 */
final class ClientProfile {
  private ClientProfile() {}

  /** {@code $FLUVIO_PROFILE}, else {@code $HOME/.fluvio/profile.json}. */
  static Path path() {
    String env = System.getenv("FLUVIO_PROFILE");
    if (env != null && !env.isEmpty()) {
      return Path.of(env);
    }
    String home = System.getenv("HOME");
    return Path.of(home != null && !home.isEmpty() ? home : System.getProperty("user.home"), ".fluvio", "profile.json");
  }

  /**
   * The client token: {@code FLUVIO_TOKEN}, else the current profile's {@code token} when
   * that profile's endpoint is {@code endpoint} ({@code resolve_token} in Python, after the
   * {@code token} option): a profile's token is never sent to another cluster.
   *
   * @param endpoint the SC the query connects to
   * @return the token, or null for none
   */
  static String token(Endpoint endpoint) {
    String env = System.getenv("FLUVIO_TOKEN");
    if (env != null && !env.isBlank()) {
      return env.strip();
    }
    JsonNode data;
    try {
      data = new ObjectMapper().readTree(Files.readString(path()));
    } catch (IOException e) {
      return null; // no profile (or an unreadable one, which endpoint() reports): no token
    }
    if (data != null && data.isObject() && data.path("profiles").isObject()) {
      data = data.path("profiles").path(data.path("current").asText(""));
    }
    if (data == null || !data.path("token").isTextual() || data.path("token").textValue().isEmpty()
        || !data.path("endpoint").isTextual()) {
      return null;
    }
    try {
      Endpoint own = Endpoint.list(data.get("endpoint").textValue(), "profile");
      return own.sameAddress(endpoint) ? data.get("token").textValue() : null;
    } catch (FluvioException e) {
      return null;
    }
  }

  /**
   * The current profile's endpoint.
   *
   * @return the endpoint
   * @throws FluvioException {@code NOT_FOUND} when there is no profile (naming the three
   *     ways to give an endpoint), {@code INVALID_CONFIG} when it is unreadable or has no
   *     valid {@code endpoint}
   */
  static Endpoint endpoint() {
    Path path = path();
    JsonNode data = current(path);
    try {
      Endpoint endpoint =
          Endpoint.list(data.get("endpoint").textValue(), "profile %s: 'endpoint'".formatted(path));
      return endpoint.withTls(tls(data));
    } catch (FluvioException e) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, e.getMessage(), e);
    }
  }

  /**
   * The current profile's TLS when it names {@code address}, else null: an endpoint given
   * explicitly to the local cluster still speaks its TLS (Python's {@code resolve_tls}).
   */
  static TlsSettings tlsFor(Endpoint address) {
    try {
      Endpoint profiled = endpoint();
      return profiled.sameAddress(address) ? profiled.tls() : null;
    } catch (FluvioException e) {
      return null;  // no profile (or an unreadable one): the options decide alone
    }
  }

  private static TlsSettings tls(JsonNode profile) {
    JsonNode tls = profile.path("tls");
    if (!tls.isObject()) {
      return null;
    }
    return TlsSettings.of(text(tls, "ca"), text(tls, "cert"), text(tls, "key"));
  }

  private static String text(JsonNode node, String name) {
    JsonNode value = node.path(name);
    return value.isTextual() ? value.textValue() : null;
  }

  /** The current profile's JSON object, with a valid {@code endpoint} field. */
  private static JsonNode current(Path path) {
    JsonNode data;
    try {
      data = new ObjectMapper().readTree(Files.readString(path));
    } catch (NoSuchFileException e) {
      throw new FluvioException(
          ErrorCode.NOT_FOUND,
          ("no cluster endpoint: give one (Fluvio.connect('host:port'), --endpoint or Spark's "
                  + "option('endpoint', ...)), set FLUVIO_ENDPOINT=host:port, or run `fluvio cluster "
                  + "start` to write the profile %s (FLUVIO_PROFILE)")
              .formatted(path));
    } catch (IOException e) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "profile %s is unreadable: %s".formatted(path, e.getMessage()), e);
    }
    if (data != null && data.isObject() && data.path("profiles").isObject()) {
      JsonNode current = data.path("current");
      if (!current.isTextual()) {
        throw new FluvioException(
            ErrorCode.NOT_FOUND,
            "no current profile in %s: `fluvio profile switch NAME`".formatted(path));
      }
      data = data.path("profiles").path(current.textValue());
    }
    if (data == null || !data.isObject() || !data.path("endpoint").isTextual()) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "profile %s has no 'endpoint'".formatted(path));
    }
    return data;
  }
}

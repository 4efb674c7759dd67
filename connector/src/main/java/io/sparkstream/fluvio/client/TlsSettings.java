package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS to a cluster, as Python's {@code TlsConfig} on the client side: the CA to trust and,
 * for mutual TLS, a client certificate and key, all PEM files (the {@code tls.ca}, {@code
 * tls.cert} and {@code tls.key} options, or the profile's {@code tls}).
 *
 * <p>Plain data, so it travels to executors inside options; the {@link SSLContext} is
 * built once per process and settings ({@code CONTEXTS}). The CA PEM goes into an in-memory
 * {@link KeyStore} through {@link CertificateFactory}; the client key is PKCS#8 PEM (what
 * {@code fluvio cluster start --tls} writes), EC or RSA. {@link #wrap} runs the handshake
 * at once and checks that the server's certificate names the host dialled (as Python's
 * {@code check_hostname}); a failure is {@code TLS} (code 80, not retriable) naming the
 * reason.
 *
 * @param ca the CA certificate(s) to trust (PEM); null: the JVM's default trust store
 * @param cert the client certificate chain (PEM) for mutual TLS; null: none
 * @param key the client certificate's private key (PKCS#8 PEM)
 */
public record TlsSettings(String ca, String cert, String key) implements Serializable {
  private static final Map<TlsSettings, SSLContext> CONTEXTS = new ConcurrentHashMap<>();
  private static final char[] NO_PASSWORD = new char[0];

  /**
   * Settings from the three options; null when none is given.
   *
   * @throws FluvioException {@code INVALID_CONFIG}: {@code cert} without {@code key} or the
   *     reverse
   */
  public static TlsSettings of(String ca, String cert, String key) {
    if (ca == null && cert == null && key == null) {
      return null;
    }
    if ((cert == null) != (key == null)) {
      throw new FluvioException(
          ErrorCode.INVALID_CONFIG, "tls: a client certificate needs both 'cert' and 'key'");
    }
    return new TlsSettings(ca, cert, key);
  }

  /**
   * The process's context for these settings, built on first use.
   *
   * @throws FluvioException {@code INVALID_CONFIG}: a file is missing or unreadable
   */
  public SSLContext context() {
    return CONTEXTS.computeIfAbsent(this, TlsSettings::build);
  }

  /**
   * Run the TLS handshake over a connected socket and return the TLS socket.
   *
   * @param plain the connected TCP socket (closed with the TLS socket)
   * @param endpoint the server dialled (its host must be in the server's certificate)
   * @return the TLS socket, handshake done
   * @throws FluvioException {@code TLS}: the handshake failed
   */
  public Socket wrap(Socket plain, Endpoint endpoint) {
    try {
      SSLSocket socket =
          (SSLSocket) context().getSocketFactory().createSocket(plain, endpoint.host(), endpoint.port(), true);
      SSLParameters params = socket.getSSLParameters();
      params.setEndpointIdentificationAlgorithm("HTTPS");
      socket.setSSLParameters(params);
      socket.startHandshake();
      return socket;
    } catch (SSLException e) {
      throw new FluvioException(
          ErrorCode.TLS, "cannot connect to %s over TLS: %s".formatted(endpoint, describe(e)), e);
    } catch (IOException e) {
      throw new FluvioException(
          ErrorCode.CONNECTION_CLOSED, "cannot connect to %s over TLS: %s".formatted(endpoint, e), e);
    }
  }

  private static String describe(SSLException e) {
    String text = String.valueOf(e.getMessage());
    if (text.contains("PKIX") || text.contains("unable to find valid certification path")) {
      return "the server's certificate is not trusted by the client's CA ('tls.ca'): " + text;
    }
    if (text.contains("No subject alternative") || text.contains("doesn't match")) {
      return "the server's certificate does not name the host dialled: " + text;
    }
    if (text.contains("Unsupported or unrecognized SSL message")) {
      return "the server does not speak TLS on this port: " + text;
    }
    return "the TLS handshake failed: " + text;
  }

  private SSLContext build() {
    try {
      TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      if (ca != null) {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        for (Certificate c : certificates("ca", ca)) {
          store.setCertificateEntry("ca-" + i++, c);
        }
        trust.init(store);
      } else {
        trust.init((KeyStore) null);
      }
      KeyManagerFactory keys = null;
      if (cert != null) {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        List<Certificate> chain = certificates("cert", cert);
        store.setKeyEntry("client", privateKey(key), NO_PASSWORD, chain.toArray(new Certificate[0]));
        keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, NO_PASSWORD);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys == null ? null : keys.getKeyManagers(), trust.getTrustManagers(), null);
      return context;
    } catch (GeneralSecurityException | IOException e) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "tls: cannot load the TLS files: %s".formatted(e), e);
    }
  }

  private static List<Certificate> certificates(String what, String path) throws IOException, GeneralSecurityException {
    try (InputStream in = Files.newInputStream(existing(what, path))) {
      Collection<? extends Certificate> found = CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (found.isEmpty()) {
        throw new FluvioException(ErrorCode.INVALID_CONFIG, "tls: '%s' file %s holds no certificate".formatted(what, path));
      }
      return new ArrayList<>(found);
    }
  }

  private static PrivateKey privateKey(String path) throws IOException, GeneralSecurityException {
    String pem = Files.readString(existing("key", path));
    String begin = "-----BEGIN PRIVATE KEY-----";
    int start = pem.indexOf(begin);
    int end = pem.indexOf("-----END PRIVATE KEY-----");
    if (start < 0 || end < 0) {
      throw new FluvioException(
          ErrorCode.INVALID_CONFIG, "tls: 'key' file %s is not an unencrypted PKCS#8 PEM key".formatted(path));
    }
    byte[] der = Base64.getMimeDecoder().decode(pem.substring(start + begin.length(), end));
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    for (String algorithm : List.of("EC", "RSA", "Ed25519")) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException e) {
        // try the next algorithm
      }
    }
    throw new FluvioException(ErrorCode.INVALID_CONFIG, "tls: 'key' file %s: unsupported key type".formatted(path));
  }

  private static Path existing(String what, String path) {
    Path p = Path.of(path);
    if (!Files.isRegularFile(p)) {
      throw new FluvioException(ErrorCode.INVALID_CONFIG, "tls: '%s' file %s does not exist".formatted(what, path));
    }
    return p;
  }
}

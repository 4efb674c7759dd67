package io.sparkstream.fluvio.client;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The SC addresses to try, in order, and which one is current: the rule of {@code
 * ScEndpoints} in {@code spark_stream/net/sc_endpoints.py}. A cluster may run standby SCs
 * beside the active one; the {@code endpoint} option lists them all ({@link Endpoint#list}).
 * A call on an address that does not answer (connection refused or closed, no reply in
 * time) moves on to the next (wrapping); a standby's {@code NOT_ACTIVE} that names the
 * active SC makes that SC current (learning its address). When no address answers the
 * error names every address tried. No sockets here: the caller's call does the connecting.
 *
 * <p>Not thread-safe: one per {@link LeaderClient}, used under its lock.
 */
public final class ScEndpoints {
  /** How many standby answers in a row are followed before the last one is thrown. */
  private static final int MAX_FOLLOWS = 3;

  private final List<Endpoint> endpoints;
  private int cursor;

  /**
   * The addresses {@code configured} names: itself, then its {@link Endpoint#others}.
   *
   * @param configured the SC endpoint as the options give it
   */
  public ScEndpoints(Endpoint configured) {
    this.endpoints = new ArrayList<>(configured.addresses());
  }

  /** The address to try now. */
  public Endpoint current() {
    return endpoints.get(cursor);
  }

  /** Every known address (the configured ones, then those learned). */
  public List<Endpoint> all() {
    return List.copyOf(endpoints);
  }

  /** The current address failed: move to the next one (wrapping) and return it. */
  public Endpoint advance() {
    cursor = (cursor + 1) % endpoints.size();
    return current();
  }

  /**
   * Make the active SC that {@code error} names current (learning a new address, spoken to
   * with the configured TLS: the same cluster).
   *
   * @param error an error from an SC
   * @return true when the error named an active SC (the caller retries at once)
   */
  public boolean follow(FluvioException error) {
    Endpoint active = Endpoint.activeSc(error);
    if (active == null) {
      return false;
    }
    Endpoint target = active.withTls(endpoints.get(0).tls());
    int index = indexOf(target);
    if (index < 0) {
      endpoints.add(target);
      index = endpoints.size() - 1;
    }
    cursor = index;
    return true;
  }

  /**
   * {@code call} on each address in turn from the current one, following a standby's
   * answer: the first result. Other errors of an SC that answered are thrown as they are.
   *
   * @param call the request, made on a connection to the address given
   * @param <T> the result
   * @return what the first SC to answer returned
   * @throws FluvioException {@code CONNECTION_CLOSED} naming every address tried when none
   *     answers (a single address: its own error), or the answering SC's error
   */
  public <T> T call(Function<Endpoint, T> call) {
    List<String> tried = new ArrayList<>();
    FluvioException last = null;
    int follows = 0;
    int unanswered = 0;
    while (unanswered < endpoints.size()) {
      Endpoint endpoint = current();
      try {
        return call.apply(endpoint);
      } catch (FluvioException e) {
        if (e.code() == ErrorCode.NOT_ACTIVE && follows < MAX_FOLLOWS && follow(e)) {
          follows++;
          continue;
        }
        if (!unanswered(e)) {
          throw e;
        }
        tried.add(endpoint + " (" + e.getMessage() + ")");
        last = e;
        unanswered++;
        advance();
      }
    }
    if (endpoints.size() == 1) {
      throw last;
    }
    throw new FluvioException(
        ErrorCode.CONNECTION_CLOSED,
        "no SC answers at any of its %d addresses: %s".formatted(endpoints.size(), String.join("; ", tried)),
        last);
  }

  /** An error that says nothing answered at the address: try the next. */
  static boolean unanswered(FluvioException e) {
    return e.code() == ErrorCode.CONNECTION_CLOSED || e.code() == ErrorCode.REQUEST_TIMEOUT;
  }

  private int indexOf(Endpoint target) {
    for (int i = 0; i < endpoints.size(); i++) {
      if (endpoints.get(i).sameAddress(target)) {
        return i;
      }
    }
    return -1;
  }
}

package io.sparkstream.fluvio.errors;

/**
 * The root of every error the connector raises on purpose, as {@code FluvioError} is in
 * Python: it carries the wire {@link ErrorCode}, so a server's error frame arrives at the
 * caller typed, and callers branch on {@link #code()} or {@link #retriable()}.
 *
 * <p>{@link #toString()} reads like Python's {@code "NotLeaderError: message"}, so the
 * messages users see are the same on both sides.
 */
public class FluvioException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final ErrorCode code;

  /**
   * An error of {@code code} with a message for humans.
   *
   * @param code what went wrong, as on the wire
   * @param message what happened, naming the input at fault
   */
  public FluvioException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  /**
   * The same, with the exception that caused it.
   *
   * @param code what went wrong, as on the wire
   * @param message what happened
   * @param cause the underlying exception
   */
  public FluvioException(ErrorCode code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /**
   * The typed error for an error frame's {@code code} and {@code message}.
   *
   * @param code the wire code; unknown codes become {@link ErrorCode#FLUVIO}
   * @param message the server's message
   * @return the exception to throw
   */
  public static FluvioException forCode(int code, String message) {
    return new FluvioException(ErrorCode.forCode(code), message);
  }

  /** The wire error code. */
  public ErrorCode code() {
    return code;
  }

  /** True when the same request may succeed later. */
  public boolean retriable() {
    return code.retriable();
  }

  @Override
  public String toString() {
    return code.pythonName() + ": " + getMessage();
  }
}

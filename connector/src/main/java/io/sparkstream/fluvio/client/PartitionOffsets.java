package io.sparkstream.fluvio.client;

/**
 * A partition's offsets as its leader answers {@code FETCH_OFFSETS} or {@code FETCH}.
 *
 * @param logStart first offset still in the log
 * @param leo log end offset
 * @param hw high watermark (committed records end here)
 * @param offset the first offset at or after a requested time; -1 when not asked or none
 */
public record PartitionOffsets(long logStart, long leo, long hw, long offset) {

  /**
   * Where a read of the given isolation ends: HW when committed, LEO when uncommitted.
   *
   * @param isolation the read's isolation
   * @return the end offset (exclusive)
   */
  public long end(Isolation isolation) {
    return isolation == Isolation.UNCOMMITTED ? leo : hw;
  }
}

package io.sparkstream.fluvio.tier;

import io.sparkstream.fluvio.errors.ErrorCode;
import io.sparkstream.fluvio.errors.FluvioException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * Names and reads inside a topic's tier directory through Hadoop's {@link FileSystem} (the
 * JVM's side of {@code spark_stream/tier/layout.py} and {@code store.py}; Python goes
 * through fsspec). A local directory, {@code file:} and whatever scheme the Hadoop
 * configuration knows ({@code s3a:}, {@code abfs:}, ...) work; fsspec's {@code s3:} is
 * Hadoop's {@code s3a:}.
 *
 * <p>The Hadoop configuration is the Spark session's ({@link #sessionConf}), taken on the
 * driver and shipped to the executors with the reader factories, so object-store
 * credentials and endpoints set the Spark way reach every tier read.
 */
public final class TierFiles {
  private TierFiles() {}

  /** {@code url} and a relative path below it, one {@code /} between them (as Python's {@code join}). */
  public static String join(String url, String relative) {
    String base = url;
    while (base.endsWith("/")) {
      base = base.substring(0, base.length() - 1);
    }
    return base + "/" + relative;
  }

  /** The manifest of {@code partition}, relative to the topic's tier. */
  public static String manifestFile(int partition) {
    return "_fluvio/partition=%d.json".formatted(partition);
  }

  /** A Hadoop path for an fsspec URL ({@code s3://} becomes {@code s3a://}). */
  static Path path(String url) {
    return new Path(url.startsWith("s3://") ? "s3a://" + url.substring("s3://".length()) : url);
  }

  /**
   * The Hadoop configuration of the active Spark session, on the driver: the one Spark's
   * own file sources use ({@code spark.hadoop.*} given when the session started, and
   * Hadoop keys set on the session with {@code spark.conf.set}).
   *
   * @return a new configuration, the caller's to keep or ship
   */
  public static Configuration sessionConf() {
    return SparkSession.active().sessionState().newHadoopConf();
  }

  /**
   * The manifest of {@code partition} in the tier at {@code tierUrl} (empty when there is
   * none yet), as {@code store.load_manifest}.
   *
   * @param tierUrl the topic's tier directory
   * @param partition the partition
   * @param conf the Hadoop configuration to open the tier with
   * @return the manifest
   * @throws FluvioException {@code STORAGE}: it cannot be read, is not a manifest, or is
   *     another partition's
   */
  public static TierManifest loadManifest(String tierUrl, int partition, Configuration conf) {
    String url = join(tierUrl, manifestFile(partition));
    String text;
    try {
      Path path = path(url);
      FileSystem fs = path.getFileSystem(conf);
      try (InputStream in = fs.open(path)) {
        text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    } catch (FileNotFoundException e) {
      return TierManifest.empty(partition);
    } catch (IOException | RuntimeException e) {
      throw new FluvioException(ErrorCode.STORAGE, "cannot read %s: %s".formatted(url, e.getMessage()), e);
    }
    TierManifest manifest = TierManifest.parse(text, url);
    if (manifest.partition() != partition) {
      throw new FluvioException(
          ErrorCode.STORAGE, "%s is the manifest of partition %d".formatted(url, manifest.partition()));
    }
    return manifest;
  }
}

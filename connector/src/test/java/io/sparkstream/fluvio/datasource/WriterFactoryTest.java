package io.sparkstream.fluvio.datasource;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkstream.fluvio.client.ProducerIds;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Map;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/** What Spark ships to executors survives Java serialization, with no socket in it. */
class WriterFactoryTest {
  private static final StructType SCHEMA =
      new StructType().add("key", DataTypes.StringType).add("value", DataTypes.BinaryType);

  @SuppressWarnings("unchecked")
  private static <T> T roundTrip(T value) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      return (T) in.readObject();
    }
  }

  @Test
  void theWriterFactoriesRoundTrip() throws Exception {
    WriterOptions opts =
        WriterOptions.parse(Map.of("endpoint", "127.0.0.1:9003", "topic", "t", "acks", "leader"));
    SinkColumns columns = SinkColumns.of(SCHEMA, true, null);
    var batch = new FluvioBatchWrite.Factory(opts, columns, SCHEMA, "w1");
    var stream = new FluvioStreamingWrite.Factory(opts, columns, SCHEMA, "q1");
    assertEquals(batch, roundTrip(batch));
    assertEquals(stream, roundTrip(stream));
    assertEquals(1, roundTrip(opts).acksCode());
  }

  @Test
  void streamingProducerIdsAreThePythonSinksIdentity() {
    // producer_id_for(query id, batch id, task): the batch id as Spark passes it to
    // Python (a string property) and to Java (a long epoch id) reads the same.
    assertEquals(ProducerIds.producerIdFor("q1", "7", 3), ProducerIds.producerIdFor("q1", 7L, 3));
  }
}

// Prints the partition Apache Kafka's Java producer chooses for each key:
// PartitionFor <partitions> <key>...
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

public class PartitionFor {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        for (int i = 1; i < args.length; i++) {
            byte[] key = args[i].getBytes(StandardCharsets.UTF_8);
            System.out.println(args[i] + " " + BuiltInPartitioner.partitionForKey(key, n));
        }
    }
}

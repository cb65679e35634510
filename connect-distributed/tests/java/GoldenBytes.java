// Writes tests/golden/golden.hex with Apache Kafka 4.4.0's own Connect
// protocol classes, the reference for tests/golden.rs.
//
// Regenerate (from the workspace root; the jars are those of the REST
// conformance suite):
//
//   L=conformance/rest-java/target/lib
//   javac -d /tmp/golden -cp "$L/*" connect-distributed/tests/java/GoldenBytes.java
//   java -cp "/tmp/golden:$L/*" GoldenBytes > connect-distributed/tests/golden/golden.hex
//
// Line format: `<kind> <name> <hex>`, where kind is `metadata`,
// `assignment` or `backoff` (the hex field is then the decimal delay of
// the given attempt of the revoking-rebalance backoff).

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.common.utils.internals.ExponentialBackoff;
import org.apache.kafka.connect.runtime.distributed.ConnectProtocol;
import org.apache.kafka.connect.runtime.distributed.ExtendedAssignment;
import org.apache.kafka.connect.runtime.distributed.ExtendedWorkerState;
import org.apache.kafka.connect.runtime.distributed.IncrementalCooperativeConnectProtocol;
import org.apache.kafka.connect.util.ConnectorTaskId;

public class GoldenBytes {
    private static final short V1 = IncrementalCooperativeConnectProtocol.CONNECT_PROTOCOL_V1;
    private static final short V2 = IncrementalCooperativeConnectProtocol.CONNECT_PROTOCOL_V2;
    private static final short OK = ConnectProtocol.Assignment.NO_ERROR;
    private static final short MISMATCH = ConnectProtocol.Assignment.CONFIG_MISMATCH;

    private static void emit(String kind, String name, ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        StringBuilder hex = new StringBuilder();
        while (b.hasRemaining()) {
            hex.append(String.format("%02x", b.get() & 0xff));
        }
        System.out.println(kind + " " + name + " " + hex);
    }

    private static List<String> connectors(String... names) {
        return new ArrayList<>(Arrays.asList(names));
    }

    private static List<ConnectorTaskId> tasks(Object... pairs) {
        List<ConnectorTaskId> out = new ArrayList<>();
        for (int i = 0; i < pairs.length; i += 2) {
            out.add(new ConnectorTaskId((String) pairs[i], (Integer) pairs[i + 1]));
        }
        return out;
    }

    private static ExtendedAssignment extended(short version, short error, String leader, String url, long offset,
                                               Collection<String> c, Collection<ConnectorTaskId> t,
                                               Collection<String> rc, Collection<ConnectorTaskId> rt, int delay) {
        return new ExtendedAssignment(version, error, leader, url, offset, c, t, rc, rt, delay);
    }

    public static void main(String[] args) {
        // --- v0 (`default`, ConnectProtocol) ---
        emit("metadata", "v0-basic",
                ConnectProtocol.serializeMetadata(new ConnectProtocol.WorkerState("http://worker-1:8083/", 12L)));
        emit("metadata", "v0-empty-url-negative-offset",
                ConnectProtocol.serializeMetadata(new ConnectProtocol.WorkerState("", -1L)));
        emit("assignment", "v0-basic",
                ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(OK, "leader-1",
                        "http://leader:8083/", 42L, connectors("jdbc"), tasks("jdbc", 0, "jdbc", 1, "s3", 0))));
        emit("assignment", "v0-empty",
                ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(OK, "leader-1",
                        "http://leader:8083/", 0L, connectors(), tasks())));
        emit("assignment", "v0-config-mismatch",
                ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(MISMATCH, "leader-1",
                        "http://leader:8083/", Long.MAX_VALUE, connectors(), tasks())));

        // --- v1 (`compatible`) and v2 (`sessioned`), IncrementalCooperativeConnectProtocol ---
        ExtendedAssignment current = extended(V1, OK, "leader-1", "http://leader:8083/", 7L,
                connectors("jdbc"), tasks("jdbc", 0, "jdbc", 1, "s3", 2),
                Collections.emptyList(), Collections.emptyList(), 0);
        emit("metadata", "v1-null-assignment", IncrementalCooperativeConnectProtocol.serializeMetadata(
                new ExtendedWorkerState("http://worker-1:8083/", 7L, null), false));
        emit("metadata", "v2-null-assignment", IncrementalCooperativeConnectProtocol.serializeMetadata(
                new ExtendedWorkerState("http://worker-1:8083/", 7L, null), true));
        emit("metadata", "v1-with-assignment", IncrementalCooperativeConnectProtocol.serializeMetadata(
                new ExtendedWorkerState("http://worker-1:8083/", 7L, current), false));
        emit("metadata", "v2-with-assignment", IncrementalCooperativeConnectProtocol.serializeMetadata(
                new ExtendedWorkerState("http://worker-1:8083/", 7L, current), true));
        emit("metadata", "v2-unicode-url", IncrementalCooperativeConnectProtocol.serializeMetadata(
                new ExtendedWorkerState("http://wörker-ü:8083/", -1L, null), true));

        emit("assignment", "v1-assigned-only", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V1, OK, "leader-1", "http://leader:8083/", 7L,
                        connectors("jdbc"), tasks("jdbc", 0),
                        Collections.emptyList(), Collections.emptyList(), 0), false));
        emit("assignment", "v1-revoked-and-delay", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V1, OK, "leader-1", "http://leader:8083/", 8L,
                        connectors(), tasks("s3", 4),
                        connectors("jdbc", "jdbc"), tasks("jdbc", 1, "mongo", 0, "jdbc", 2), 12345), false));
        emit("assignment", "v1-config-mismatch", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V1, MISMATCH, "leader-1", "http://leader:8083/", 99L,
                        connectors(), tasks(), connectors(), tasks(), 0), false));
        emit("assignment", "v2-empty", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V2, OK, "leader-1", "http://leader:8083/", 0L,
                        connectors(), tasks(), connectors(), tasks(), 0), true));
        emit("assignment", "v2-full", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V2, OK, "m-1-0b7e", "http://10.0.0.1:8083/", 1234567890123L,
                        connectors("a"), tasks("a", 0, "b", 3, "b", 1),
                        connectors("c"), tasks("c", 0, "c", 1), 300000), true));
        emit("assignment", "v2-max-delay", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V2, OK, "", "", -1L,
                        connectors(), tasks("x", Integer.MAX_VALUE),
                        connectors(), tasks(), Integer.MAX_VALUE), true));
        emit("assignment", "v2-many-connectors", IncrementalCooperativeConnectProtocol.serializeAssignment(
                extended(V2, OK, "leader-1", "http://leader:8083/", 3L,
                        connectors("zeta", "alpha", "mid", "connector-10", "connector-2"),
                        tasks("alpha", 0, "zeta", 0, "zeta", 1, "omega", 5),
                        connectors(), tasks(), 0), true));

        // The backoff between consecutive revoking rebalances (IncrementalCooperativeAssignor).
        for (int maxDelay : new int[] {300000, 0, 1, 1000, 60000}) {
            ExponentialBackoff backoff = new ExponentialBackoff(maxDelay == 0 ? 0 : 1, 40, maxDelay, 0);
            for (int attempt = 0; attempt <= 6; attempt++) {
                System.out.println("backoff " + maxDelay + "/" + attempt + " " + backoff.backoff(attempt));
            }
        }
    }
}

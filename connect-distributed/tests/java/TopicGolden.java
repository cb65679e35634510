// Golden bytes for the config and status topics' records, written by Apache
// Kafka 4.4.0's own KafkaConfigBackingStore and KafkaStatusBackingStore.
//
// The stores' public write methods (putConnectorConfig, putTaskConfigs,
// putTargetState, putSessionKey, putRestartRequest, putTaskCountRecord,
// putLoggerLevel, removeConnectorConfig; put(ConnectorStatus),
// put(TaskStatus), put(TopicStatus), deleteTopic) run unchanged with the
// internal JsonConverter (schemas.enable=false) that Connect's Worker gives
// them. Only their KafkaBasedLog is replaced by a subclass that records each
// (key, value) instead of producing it. The config store is allocated without
// its constructor (which would build Kafka clients), and its fields are set
// by reflection to what the constructor would set.
//
// Regenerate from the workspace root:
//
//   L=conformance/rest-java/target/lib
//   javac -d /tmp/topic-golden -cp "$L/*" connect-distributed/tests/java/TopicGolden.java
//   java -cp "/tmp/topic-golden:$L/*" TopicGolden > connect-distributed/tests/golden/topics.txt
//
// Output: one record a line, `<topic> <case> <key hex> <value hex or ->`.

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

import javax.crypto.spec.SecretKeySpec;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.AbstractStatus;
import org.apache.kafka.connect.runtime.ConnectorStatus;
import org.apache.kafka.connect.runtime.RestartRequest;
import org.apache.kafka.connect.runtime.SessionKey;
import org.apache.kafka.connect.runtime.TargetState;
import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.runtime.TopicStatus;
import org.apache.kafka.connect.storage.KafkaConfigBackingStore;
import org.apache.kafka.connect.storage.KafkaStatusBackingStore;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.apache.kafka.connect.util.KafkaBasedLog;

public class TopicGolden {
    static final List<String[]> sent = new ArrayList<>();

    /** A KafkaBasedLog that records what is sent; allocated without a constructor. */
    public static class CapturingLog extends KafkaBasedLog<String, byte[]> {
        private CapturingLog() {
            super(null, null, null, null, null, null, null);
        }

        @Override
        public Future<RecordMetadata> sendWithReceipt(String key, byte[] value) {
            sent.add(new String[] {key, value == null ? null : hex(value)});
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public Future<RecordMetadata> sendWithReceipt(String key, byte[] value, Callback callback) {
            return sendWithReceipt(key, value);
        }

        @Override
        public void send(String key, byte[] value, Callback callback) {
            sendWithReceipt(key, value);
        }

        @Override
        public void send(String key, byte[] value) {
            sendWithReceipt(key, value);
        }

        @Override
        public Future<Void> readToEnd() {
            return CompletableFuture.completedFuture(null);
        }
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    static Object allocate(Class<?> cls) throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        return ((sun.misc.Unsafe) f.get(null)).allocateInstance(cls);
    }

    static void set(Object target, Class<?> cls, String field, Object value) throws Exception {
        Field f = cls.getDeclaredField(field);
        f.setAccessible(true);
        f.set(target, value);
    }

    static String topic;
    static int count;

    /** Prints what the call sent, naming each record `<name>`, `<name>.1`, ... */
    static void emit(String name) {
        for (int i = 0; i < sent.size(); i++) {
            String[] kv = sent.get(i);
            String label = sent.size() == 1 ? name : name + "." + i;
            System.out.println(topic + " " + label + " "
                    + hex(kv[0].getBytes(StandardCharsets.UTF_8)) + " " + (kv[1] == null ? "-" : kv[1]));
        }
        sent.clear();
    }

    static Map<String, String> props(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    public static void main(String[] args) throws Exception {
        JsonConverter converter = new JsonConverter();
        // What Worker's internal converter is: JsonConverter, schemas off.
        converter.configure(Collections.singletonMap("schemas.enable", "false"), false);

        // --- config topic ---
        topic = "config";
        KafkaConfigBackingStore config = (KafkaConfigBackingStore) allocate(KafkaConfigBackingStore.class);
        Class<?> c = KafkaConfigBackingStore.class;
        set(config, c, "lock", new Object());
        set(config, c, "converter", converter);
        set(config, c, "topic", "connect-configs");
        set(config, c, "time", Time.SYSTEM);
        set(config, c, "usesFencableWriter", false);
        KafkaBasedLog<String, byte[]> log = (CapturingLog) allocate(CapturingLog.class);
        set(config, c, "configLog", log);

        config.putConnectorConfig("jdbc-source",
                props("connector.class", "io.example.JdbcSource", "tasks.max", "2", "name", "jdbc-source"), null);
        emit("connector");
        Map<String, String> odd = props("quote", "a\"b\\c", "controls", "\u0000\u0001\u001f\b\t\n\u000b\f\r",
                "unicode", "\u00e9\u540d\ud83d\ude00/\u007f\u2028", "", "empty key");
        odd.put("null.value", null);
        config.putConnectorConfig("w\u00e9ird \u540d-", odd, null);
        emit("connector-escapes");
        config.putConnectorConfig("empty", props(), null);
        emit("connector-empty");
        config.putConnectorConfig("paused-at-birth", props("k", "v"), TargetState.PAUSED);
        emit("connector-with-target-state");
        config.putTaskConfigs("jdbc-source", Arrays.asList(props("task.id", "0"), props("task.id", "1")));
        emit("task-configs");
        config.putTaskConfigs("a--b-", Collections.singletonList(props("x", "y")));
        emit("task-configs-dashes");
        config.putTaskConfigs("no-tasks", Collections.emptyList());
        emit("task-configs-none");
        config.putTargetState("jdbc-source", TargetState.STARTED);
        emit("target-state-started");
        config.putTargetState("jdbc-source", TargetState.PAUSED);
        emit("target-state-paused");
        config.putTargetState("jdbc-source", TargetState.STOPPED);
        emit("target-state-stopped");
        byte[] keyBytes = new byte[32];
        for (int i = 0; i < keyBytes.length; i++) keyBytes[i] = (byte) (i * 7 + 250);
        config.putSessionKey(new SessionKey(new SecretKeySpec(keyBytes, "HmacSHA256"), 1700000000123L));
        emit("session-key");
        config.putRestartRequest(new RestartRequest("jdbc-source", false, true));
        emit("restart-include-tasks");
        config.putRestartRequest(new RestartRequest("jdbc-source", true, false));
        emit("restart-only-failed");
        config.putTaskCountRecord("jdbc-source", 3);
        emit("task-count");
        config.putLoggerLevel("org.apache.kafka.connect", "DEBUG");
        emit("logger-level");
        config.removeConnectorConfig("jdbc-source");
        emit("remove-connector");

        // --- status topic ---
        topic = "status";
        KafkaStatusBackingStore status = new KafkaStatusBackingStore(Time.SYSTEM, converter, () -> null, "golden-");
        set(status, KafkaStatusBackingStore.class, "kafkaLog", (CapturingLog) allocate(CapturingLog.class));
        set(status, KafkaStatusBackingStore.class, "statusTopic", "connect-status");

        status.put(new ConnectorStatus("jdbc-source", AbstractStatus.State.RUNNING, "10.0.0.1:8083", 5, "4.4.0"));
        emit("connector-running");
        status.put(new TaskStatus(new ConnectorTaskId("my-sink", 3), AbstractStatus.State.FAILED, "10.0.0.2:8083", 7,
                "java.lang.Exception: boom\n\tat X.y(X.java:1)\n", null));
        emit("task-failed");
        status.put(new TaskStatus(new ConnectorTaskId("a--b-", 0), AbstractStatus.State.UNASSIGNED, "w\u00e9:8083", 0));
        emit("task-unassigned-dashes");
        status.put(new ConnectorStatus("stopped-one", AbstractStatus.State.STOPPED, "w:1", Integer.MAX_VALUE));
        emit("connector-stopped");
        status.put(new ConnectorStatus("gone", AbstractStatus.State.DESTROYED, "w:1", 9));
        emit("connector-destroyed");
        status.put(new TopicStatus("orders", new ConnectorTaskId("my-sink", 2), 1700000000456L));
        emit("topic");
        status.deleteTopic("my-sink", "orders");
        emit("topic-deleted");
    }
}

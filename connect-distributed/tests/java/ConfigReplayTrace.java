// Java's own replay of the config topic, for comparison with ConfigState.
//
// Runs Kafka 4.4.0's KafkaConfigBackingStore consumer callback
// (KafkaConfigBackingStore$ConsumeCallback, private, reached by reflection)
// over 200 random record sequences on a few connectors: connector and task
// configs, commits (some with too few task configs, some for deleted
// connectors), target states, task count records, tombstones, and a few
// malformed values (not JSON, a non-integer task count, a non-object). After
// each sequence it prints the store's state (its package-private maps).
// tests/topics_replay.rs replays the same records through ConfigState and
// must print the same.
//
// Regenerate from the workspace root:
//
//   L=conformance/rest-java/target/lib
//   javac -d /tmp/topic-golden -cp "$L/*" connect-distributed/tests/java/ConfigReplayTrace.java
//   java -cp "/tmp/topic-golden:$L/*" ConfigReplayTrace > connect-distributed/tests/golden/config_replay.txt

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.TargetState;
import org.apache.kafka.connect.storage.AppliedConnectorConfig;
import org.apache.kafka.connect.storage.KafkaConfigBackingStore;
import org.apache.kafka.connect.util.Callback;
import org.apache.kafka.connect.util.ConnectorTaskId;

public class ConfigReplayTrace {
    static final String[] CONNECTORS = {"a", "b", "c-d"};
    static final String[] VALUES = {"x", "y", "z"};

    static Object allocate(Class<?> cls) throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        return ((sun.misc.Unsafe) f.get(null)).allocateInstance(cls);
    }

    static Field field(String name) throws Exception {
        Field f = KafkaConfigBackingStore.class.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    static String[] record(Random r) {
        String c = CONNECTORS[r.nextInt(CONNECTORS.length)];
        String v = VALUES[r.nextInt(VALUES.length)];
        int kind = r.nextInt(20);
        if (kind < 3) return new String[] {"connector-" + c, "{\"properties\":{\"k\":\"" + v + "\"}}"};
        if (kind < 9) return new String[] {"task-" + c + "-" + r.nextInt(4), "{\"properties\":{\"k\":\"" + v + "\"}}"};
        if (kind < 12) return new String[] {"commit-" + c, "{\"tasks\":" + (r.nextInt(6) - 1) + "}"};
        if (kind < 13) {
            TargetState s = TargetState.values()[r.nextInt(3)];
            return new String[] {"target-state-" + c,
                "{\"state\":\"" + (s == TargetState.STOPPED ? "PAUSED" : s.name()) + "\",\"state.v2\":\"" + s.name() + "\"}"};
        }
        if (kind < 14) return new String[] {"connector-" + c, null};
        if (kind < 15) return new String[] {"target-state-" + c, null};
        if (kind < 16) return new String[] {"tasks-fencing-" + c, "{\"task-count\":" + r.nextInt(4) + "}"};
        if (kind < 17) return new String[] {"commit-" + c, r.nextBoolean() ? null : "{\"tasks\":1.5}"};
        if (kind < 18) return new String[] {"commit-" + c, "{"};
        if (kind < 19) return new String[] {"task-" + c + "-" + r.nextInt(4), r.nextBoolean() ? null : "[1]"};
        return new String[] {"connector-" + c, "{\"properties\":5}"};
    }

    static String k(Map<String, String> m) {
        return m == null ? "-" : String.valueOf(m.get("k"));
    }

    static String opt(Object o) {
        return o == null ? "-" : o.toString();
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        // The store logs every record it skips; keep stdout for the trace.
        System.setProperty("org.apache.logging.log4j.level", "OFF");
        System.setProperty("log4j2.level", "OFF");
        JsonConverter converter = new JsonConverter();
        converter.configure(Collections.singletonMap("schemas.enable", "false"), false);
        Class<?> cbClass = Class.forName("org.apache.kafka.connect.storage.KafkaConfigBackingStore$ConsumeCallback");
        Constructor<?> cbCtor = cbClass.getDeclaredConstructor(KafkaConfigBackingStore.class);
        cbCtor.setAccessible(true);
        Field rawConfig = AppliedConnectorConfig.class.getDeclaredField("rawConfig");
        rawConfig.setAccessible(true);

        Random random = new Random(20261202L);
        for (int n = 0; n < 200; n++) {
            KafkaConfigBackingStore store = (KafkaConfigBackingStore) allocate(KafkaConfigBackingStore.class);
            field("lock").set(store, new Object());
            field("converter").set(store, converter);
            field("topic").set(store, "connect-configs");
            field("offset").set(store, -1L);
            for (String m : new String[] {"connectorTaskCounts", "connectorConfigs", "taskConfigs",
                    "deferredTaskUpdates", "connectorTargetStates", "connectorTaskCountRecords",
                    "connectorTaskConfigGenerations", "appliedConnectorConfigs"})
                field(m).set(store, new HashMap<>());
            field("inconsistent").set(store, new HashSet<>());
            field("connectorsPendingFencing").set(store, new HashSet<>());
            Callback<ConsumerRecord<String, byte[]>> callback =
                    (Callback<ConsumerRecord<String, byte[]>>) cbCtor.newInstance(store);

            System.out.println("case " + n);
            int len = random.nextInt(30);
            for (int offset = 0; offset < len; offset++) {
                String[] kv = record(random);
                byte[] value = kv[1] == null ? null : kv[1].getBytes(StandardCharsets.UTF_8);
                System.out.println("record " + offset + " " + hex(kv[0].getBytes(StandardCharsets.UTF_8)) + " "
                        + (value == null ? "-" : hex(value)));
                try {
                    callback.onCompletion(null, new ConsumerRecord<>("connect-configs", 0, offset, kv[0], value));
                } catch (RuntimeException e) {
                    // Java's KafkaBasedLog logs exceptions thrown by the callback and carries on.
                }
            }

            Map<String, Integer> counts = (Map<String, Integer>) field("connectorTaskCounts").get(store);
            Map<String, Map<String, String>> configs = (Map<String, Map<String, String>>) field("connectorConfigs").get(store);
            Map<ConnectorTaskId, Map<String, String>> tasks = (Map<ConnectorTaskId, Map<String, String>>) field("taskConfigs").get(store);
            Map<String, Map<ConnectorTaskId, Map<String, String>>> deferred =
                    (Map<String, Map<ConnectorTaskId, Map<String, String>>>) field("deferredTaskUpdates").get(store);
            Set<String> inconsistent = (Set<String>) field("inconsistent").get(store);
            Map<String, TargetState> targets = (Map<String, TargetState>) field("connectorTargetStates").get(store);
            Map<String, Integer> fences = (Map<String, Integer>) field("connectorTaskCountRecords").get(store);
            Map<String, Integer> gens = (Map<String, Integer>) field("connectorTaskConfigGenerations").get(store);
            Map<String, AppliedConnectorConfig> applied = (Map<String, AppliedConnectorConfig>) field("appliedConnectorConfigs").get(store);
            Set<String> pendingFencing = (Set<String>) field("connectorsPendingFencing").get(store);

            System.out.println("offset " + field("offset").get(store));
            for (String c : CONNECTORS) {
                Map<ConnectorTaskId, Map<String, String>> d = deferred.get(c);
                String pending = "-";
                if (d != null) {
                    TreeMap<Integer, String> sorted = new TreeMap<>();
                    for (Map.Entry<ConnectorTaskId, Map<String, String>> e : d.entrySet()) sorted.put(e.getKey().task(), k(e.getValue()));
                    List<String> parts = new ArrayList<>();
                    for (Map.Entry<Integer, String> e : sorted.entrySet()) parts.add(e.getKey() + ":" + e.getValue());
                    pending = "[" + String.join(",", parts) + "]";
                }
                AppliedConnectorConfig ac = applied.get(c);
                System.out.println("connector " + c
                        + " config=" + k(configs.get(c))
                        + " count=" + opt(counts.get(c))
                        + " inconsistent=" + inconsistent.contains(c)
                        + " target=" + opt(targets.get(c))
                        + " generation=" + opt(gens.get(c))
                        + " task-count-record=" + opt(fences.get(c))
                        + " pending-fencing=" + pendingFencing.contains(c)
                        + " applied=" + (ac == null ? "-" : k((Map<String, String>) rawConfig.get(ac)))
                        + " deferred=" + pending);
                TreeMap<Integer, String> ts = new TreeMap<>();
                for (Map.Entry<ConnectorTaskId, Map<String, String>> e : tasks.entrySet())
                    if (e.getKey().connector().equals(c)) ts.put(e.getKey().task(), k(e.getValue()));
                for (Map.Entry<Integer, String> e : ts.entrySet())
                    System.out.println("task " + c + " " + e.getKey() + " " + e.getValue());
            }
        }
    }
}

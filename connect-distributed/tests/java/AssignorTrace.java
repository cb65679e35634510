// Runs Apache Kafka 4.4.0's own IncrementalCooperativeAssignor over
// random simulated clusters and writes what it decided, round by round,
// to tests/golden/assignor_trace.txt; tests/assignor_trace.rs replays the
// same steps with the Rust port and compares every round.
//
// It lives in Kafka's package to call the assignor's package-private
// performTaskAssignment(configSnapshot, lastCompletedGeneration,
// generation, memberAssignments) -- the same entry point Kafka's own unit
// tests use. Members are given in id order (Java's HashMap order for the
// one-letter ids used here is the same).
//
// Regenerate (from the workspace root):
//
//   L=conformance/rest-java/target/lib
//   javac -d /tmp/golden -cp "$L/*" connect-distributed/tests/java/AssignorTrace.java
//   java -cp "/tmp/golden:$L/*" org.apache.kafka.connect.runtime.distributed.AssignorTrace \
//       > connect-distributed/tests/golden/assignor_trace.txt
//
// Format: `case <n> delay <max delay>`, then steps: `add <id>`,
// `remove <id>`, `set <connector> <tasks>`, `delete <connector>`,
// `advance <ms>`, `round`; after each `round`, one line per member:
// `member <id> assigned <items> revoked <items> delay <ms>`, items
// comma-separated (`-` when none), connectors by name and tasks as
// `<connector>/<task>`; assigned in the assignor's order, revoked sorted.

package org.apache.kafka.connect.runtime.distributed;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.connect.storage.ClusterConfigState;
import org.apache.kafka.connect.util.ConnectorTaskId;

public class AssignorTrace {
    static final int CASES = 300;

    static long now;

    static final Time CLOCK = new Time() {
        public long milliseconds() { return now; }
        public long nanoseconds() { return now * 1_000_000L; }
        public void sleep(long ms) { now += ms; }
        public void waitObject(Object o, Supplier<Boolean> c, long deadline) { }
    };

    static class Worker {
        List<String> connectors = new ArrayList<>();
        List<ConnectorTaskId> tasks = new ArrayList<>();
    }

    static TreeMap<String, Worker> workers;
    static TreeMap<String, Integer> config;
    static IncrementalCooperativeAssignor assignor;
    static String leader;
    static int generation;
    static int maxDelay;
    static char nextId;
    static StringBuilder out;
    static long offset;

    static String items(Collection<String> cs, Collection<ConnectorTaskId> ts) {
        List<String> parts = new ArrayList<>();
        for (String c : cs) parts.add(c);
        for (ConnectorTaskId t : ts) parts.add(t.connector() + "/" + t.task());
        return parts.isEmpty() ? "-" : String.join(",", parts);
    }

    static int round() {
        out.append("round\n");
        String first = workers.firstKey();
        if (leader == null || !workers.containsKey(leader)) {
            leader = first;
            assignor = new IncrementalCooperativeAssignor(new LogContext(), CLOCK, maxDelay);
        }
        int lastCompleted = generation;
        generation++;
        Map<String, Map<String, String>> connectorConfigs = new HashMap<>();
        Map<String, Integer> taskCounts = new HashMap<>();
        for (Map.Entry<String, Integer> e : config.entrySet()) {
            connectorConfigs.put(e.getKey(), Collections.emptyMap());
            taskCounts.put(e.getKey(), e.getValue());
        }
        ClusterConfigState snapshot = new ClusterConfigState(offset, null, taskCounts, connectorConfigs,
                Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(),
                Collections.emptyMap(), Collections.emptySet(), Collections.emptySet());
        Map<String, WorkerCoordinator.ConnectorsAndTasks> members = new LinkedHashMap<>();
        for (Map.Entry<String, Worker> e : workers.entrySet()) {
            members.put(e.getKey(), new WorkerCoordinator.ConnectorsAndTasks.Builder()
                    .with(new ArrayList<>(e.getValue().connectors), new ArrayList<>(e.getValue().tasks)).build());
        }
        IncrementalCooperativeAssignor.ClusterAssignment result =
                assignor.performTaskAssignment(snapshot, lastCompleted, generation, members);
        int delay = assignor.delay;
        boolean revokedAny = false;
        for (Map.Entry<String, Worker> e : workers.entrySet()) {
            String id = e.getKey();
            Worker w = e.getValue();
            Collection<String> ac = result.newlyAssignedConnectors(id);
            Collection<ConnectorTaskId> at = result.newlyAssignedTasks(id);
            Collection<String> rc = result.newlyRevokedConnectors(id);
            Collection<ConnectorTaskId> rt = result.newlyRevokedTasks(id);
            revokedAny |= !rc.isEmpty() || !rt.isEmpty();
            out.append("member ").append(id)
                    .append(" assigned ").append(items(ac, at))
                    .append(" revoked ").append(items(new TreeSet<>(rc), new TreeSet<>(rt)))
                    .append(" delay ").append(delay).append('\n');
            // Apply as WorkerCoordinator.onJoinComplete does: new first, then what was kept.
            List<String> connectors = new ArrayList<>(ac);
            for (String c : w.connectors) if (!rc.contains(c)) connectors.add(c);
            List<ConnectorTaskId> tasks = new ArrayList<>(at);
            for (ConnectorTaskId t : w.tasks) if (!rt.contains(t)) tasks.add(t);
            w.connectors = connectors;
            w.tasks = tasks;
        }
        return revokedAny ? -1 : delay;
    }

    static void add() {
        String id = String.valueOf(nextId++);
        workers.put(id, new Worker());
        out.append("add ").append(id).append('\n');
    }

    static void set(Random r) {
        String name = "c" + r.nextInt(6);
        int tasks = r.nextInt(6);
        config.put(name, tasks);
        offset++;
        out.append("set ").append(name).append(' ').append(tasks).append('\n');
    }

    static void advance(long ms) {
        now += ms;
        out.append("advance ").append(ms).append('\n');
    }

    public static void main(String[] args) {
        Random r = new Random(20240415L);
        int[] delays = {0, 1000, 300000};
        for (int n = 0; n < CASES; n++) {
            out = new StringBuilder();
            workers = new TreeMap<>();
            config = new TreeMap<>();
            leader = null;
            assignor = null;
            generation = 0;
            offset = 0;
            now = 1_000_000L;
            nextId = 'a';
            maxDelay = delays[r.nextInt(delays.length)];
            out.append("case ").append(n).append(" delay ").append(maxDelay).append('\n');
            int initialWorkers = 1 + r.nextInt(4);
            for (int i = 0; i < initialWorkers; i++) add();
            int initialConnectors = r.nextInt(5);
            for (int i = 0; i < initialConnectors; i++) set(r);
            round();
            int events = r.nextInt(16);
            for (int e = 0; e < events; e++) {
                int kind = r.nextInt(10);
                if (kind < 2 && nextId <= 'o') {
                    add();
                } else if (kind < 4 && workers.size() > 1) {
                    List<String> ids = new ArrayList<>(workers.keySet());
                    String id = ids.get(r.nextInt(ids.size()));
                    workers.remove(id);
                    out.append("remove ").append(id).append('\n');
                } else if (kind < 6) {
                    set(r);
                } else if (kind < 7 && !config.isEmpty()) {
                    List<String> names = new ArrayList<>(config.keySet());
                    String name = names.get(r.nextInt(names.size()));
                    config.remove(name);
                    offset++;
                    out.append("delete ").append(name).append('\n');
                } else if (kind < 9) {
                    advance(r.nextInt(2) == 0 ? r.nextInt(2000) : r.nextInt(400_000));
                }
                round();
            }
            // Settle the way workers do: rejoin at once after a revocation,
            // after the announced delay otherwise.
            for (int i = 0; i < 30; i++) {
                int result = round();
                if (result > 0) advance(result);
                else if (result == 0 && i > 0) break;
            }
            out.append("end\n");
            System.out.print(out);
        }
    }
}

// Runs Apache Kafka 4.4.0's own EagerAssignor on rounds that
// tests/eager_trace.rs generates, and answers with the bytes it would send
// every member in SyncGroup; the Rust test compares them with
// connect_distributed::assignor::assign_eager's.
//
// The assignor is called through its public entry point,
// performAssignment(leaderId, EAGER, members, coordinator), with the
// members' JoinGroup metadata bytes as the broker would hand them over.
// The coordinator is only asked for its config snapshot
// (configSnapshot()), a fresh one (configFreshSnapshot(), which reads
// configStorage.snapshot()) and to keep the leader state, so the test
// allocates a WorkerCoordinator without running its constructor (which
// needs a network client) and sets those two fields.
//
// Built and run by tests/eager_trace.rs (javac, then java, on the classpath
// Maven resolves for tests/java/pom.xml). One round per input line, tokens
// separated by single spaces, strings as hex of their UTF-8 bytes:
//
//   <leader> <stale offset> <fresh offset> <members> (<id> <metadata>)*
//   <stale connectors> (<name> <tasks>)* <fresh connectors> (<name> <tasks>)*
//
// (metadata as hex of its bytes); one answer line per round: `ok <members>`
// then `<id> <assignment>` pairs (hex), or `error <exception class>`.

package org.apache.kafka.connect.runtime.distributed;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.message.JoinGroupResponseData.JoinGroupResponseMember;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.connect.storage.ClusterConfigState;
import org.apache.kafka.connect.storage.ConfigBackingStore;

public class EagerTrace {
    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++)
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static String str(String hex) {
        return new String(unhex(hex), StandardCharsets.UTF_8);
    }

    static String hex(ByteBuffer b) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get() & 0xff));
        return sb.toString();
    }

    static int pos;

    static ClusterConfigState snapshot(long offset, String[] t) {
        int n = Integer.parseInt(t[pos++]);
        Map<String, Map<String, String>> connectorConfigs = new HashMap<>();
        Map<String, Integer> taskCounts = new HashMap<>();
        for (int i = 0; i < n; i++) {
            String name = str(t[pos++]);
            int tasks = Integer.parseInt(t[pos++]);
            connectorConfigs.put(name, Collections.emptyMap());
            taskCounts.put(name, tasks);
        }
        return new ClusterConfigState(offset, null, taskCounts, connectorConfigs,
                Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(), Collections.emptyMap(),
                Collections.emptyMap(), Collections.emptySet(), Collections.emptySet());
    }

    public static void main(String[] args) throws Exception {
        Field unsafeField = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        unsafeField.setAccessible(true);
        sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);
        Field storageField = WorkerCoordinator.class.getDeclaredField("configStorage");
        storageField.setAccessible(true);
        EagerAssignor assignor = new EagerAssignor(new LogContext());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            String[] t = line.split(" ");
            pos = 0;
            String leader = str(t[pos++]);
            long staleOffset = Long.parseLong(t[pos++]);
            long freshOffset = Long.parseLong(t[pos++]);
            int n = Integer.parseInt(t[pos++]);
            List<JoinGroupResponseMember> members = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String id = str(t[pos++]);
                byte[] metadata = unhex(t[pos++]);
                members.add(new JoinGroupResponseMember().setMemberId(id).setMetadata(metadata));
            }
            ClusterConfigState stale = snapshot(staleOffset, t);
            ClusterConfigState fresh = snapshot(freshOffset, t);

            WorkerCoordinator coordinator = (WorkerCoordinator) unsafe.allocateInstance(WorkerCoordinator.class);
            ConfigBackingStore storage = (ConfigBackingStore) Proxy.newProxyInstance(
                    EagerTrace.class.getClassLoader(), new Class<?>[] {ConfigBackingStore.class},
                    (proxy, method, a) -> {
                        if (method.getName().equals("snapshot")) return fresh;
                        throw new UnsupportedOperationException(method.getName());
                    });
            storageField.set(coordinator, storage);
            coordinator.configSnapshot(stale);

            try {
                Map<String, ByteBuffer> result = assignor.performAssignment(
                        leader, ConnectProtocolCompatibility.EAGER, members, coordinator);
                StringBuilder sb = new StringBuilder("ok ").append(result.size());
                for (Map.Entry<String, ByteBuffer> e : result.entrySet()) {
                    sb.append(' ').append(hex(ByteBuffer.wrap(e.getKey().getBytes(StandardCharsets.UTF_8))))
                            .append(' ').append(hex(e.getValue()));
                }
                out.println(sb);
            } catch (RuntimeException e) {
                out.println("error " + e.getClass().getName());
            }
        }
        out.flush();
    }
}

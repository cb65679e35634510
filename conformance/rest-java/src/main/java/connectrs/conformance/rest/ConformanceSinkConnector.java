package connectrs.conformance.rest;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * A sink connector for the REST differential test: no settings of its own; one
 * task that drops what it gets. The Rust side registers a twin under the same class name.
 */
public class ConformanceSinkConnector extends SinkConnector {
    private Map<String, String> props;

    @Override public String version() { return "1.0"; }
    @Override public void start(Map<String, String> props) { this.props = props; }
    @Override public Class<? extends Task> taskClass() { return DropSinkTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        return Collections.singletonList(props);
    }
    @Override public void stop() { }
    @Override public ConfigDef config() { return new ConfigDef(); }
    @Override public boolean alterOffsets(Map<String, String> config,
            Map<TopicPartition, Long> offsets) {
        return true;
    }

    /** Drops every record. */
    public static class DropSinkTask extends SinkTask {
        @Override public String version() { return "1.0"; }
        @Override public void start(Map<String, String> props) { }
        @Override public void put(Collection<SinkRecord> records) { }
        @Override public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) { }
        @Override public void stop() { }
    }
}

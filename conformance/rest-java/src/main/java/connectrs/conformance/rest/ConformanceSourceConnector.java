package connectrs.conformance.rest;

import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A source connector for the REST differential test: a required string `topic`,
 * an int `batch.size` (default 10, at least 1); one task that produces nothing.
 * `fail.start=true` makes the connector fail to start, `fail.task=true` its task.
 * The Rust side registers a twin under the same class name.
 */
public class ConformanceSourceConnector extends SourceConnector {
    static final ConfigDef CONFIG_DEF = new ConfigDef()
        .define("topic", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE,
                ConfigDef.Importance.HIGH, "Topic to write to.", "Conformance", 1,
                ConfigDef.Width.NONE, "topic")
        .define("batch.size", ConfigDef.Type.INT, 10, ConfigDef.Range.atLeast(1),
                ConfigDef.Importance.LOW, "Unused number.", "Conformance", 2,
                ConfigDef.Width.NONE, "batch.size");

    private Map<String, String> props;

    @Override public String version() { return "1.0"; }
    @Override public void start(Map<String, String> props) {
        if ("true".equals(props.get("fail.start"))) {
            throw new ConnectException("configured to fail");
        }
        this.props = props;
    }
    @Override public Class<? extends Task> taskClass() { return IdleSourceTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        return Collections.singletonList(props);
    }
    @Override public void stop() { }
    @Override public ConfigDef config() { return CONFIG_DEF; }
    @Override public boolean alterOffsets(Map<String, String> config,
            Map<Map<String, ?>, Map<String, ?>> offsets) {
        return true;
    }

    /** Polls nothing, slowly. */
    public static class IdleSourceTask extends SourceTask {
        @Override public String version() { return "1.0"; }
        @Override public void start(Map<String, String> props) {
            if ("true".equals(props.get("fail.task"))) {
                throw new ConnectException("configured to fail");
            }
        }
        @Override public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(100);
            return null;
        }
        @Override public void stop() { }
    }
}

// Only for the head-to-head benchmark (benches/head-to-head/run.sh): the
// FileStream connectors are on Maven Central up to 4.3.1, whose version()
// calls this class; Kafka 4.4 moved it to org.apache.kafka.common.utils.internals.
// This forwards that one call, so the 4.3.1 connectors run on the 4.4.0 runtime.
package org.apache.kafka.common.utils;

public final class AppInfoParser {
    private AppInfoParser() {
    }

    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }
}

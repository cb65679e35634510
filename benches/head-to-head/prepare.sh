# Sourced by run.sh and exactly-once.sh: the release binaries, Kafka
# Connect 4.4.0's Java worker (connect-file 4.3.1 on plugin.path, with the
# compat/ shim), a real broker of the run's own (stopped on exit) and the
# input file of $records lines. Sets: here repo work tool rest_java
# bootstrap input, and log().
# The caller sets records, and bins (the worker binaries to build).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work="$repo/target/head-to-head"
tool="$repo/target/release/head_to_head"
rest_java="$repo/conformance/rest-java"
log() { echo "head-to-head: $*" >&2; }

if [ -z "${H2H_NO_BUILD:-}" ]; then
    log "building our worker and the measuring tool (release)"
    bin_args=()
    for b in $bins head_to_head; do bin_args+=(--bin "$b"); done
    (cd "$repo" && cargo build --release --locked -q -p connect-worker -p connect-benches "${bin_args[@]}")
fi
log "resolving Kafka Connect 4.4.0 and connect-file 4.3.1 with Maven"
mvn -B -q -f "$rest_java/pom.xml" package >/dev/null
mkdir -p "$work/plugins/connect-file"
[ -f "$work/plugins/connect-file/connect-file-4.3.1.jar" ] ||
    mvn -B -q dependency:copy -Dartifact=org.apache.kafka:connect-file:4.3.1 \
        -DoutputDirectory="$work/plugins/connect-file" >/dev/null
# connect-file 4.3.1's version() calls a class Kafka 4.4 moved (compat/ says more).
mkdir -p "$work/compat"
javac -d "$work/compat" -cp "$rest_java/target/lib/*" \
    "$here/compat/org/apache/kafka/common/utils/AppInfoParser.java"

log "starting the real broker"
bootstrap=$("$repo/tools/real-kafka/broker.sh" start --dir "$work/broker" --owner $$ | sed -n 's/^bootstrap.servers=//p')
trap '"$repo/tools/real-kafka/broker.sh" stop --dir "$work/broker" >/dev/null 2>&1 || true' EXIT
log "broker at $bootstrap"

input="$work/input.txt"
if [ ! -f "$input" ] || [ "$(wc -l <"$input")" != "$records" ]; then
    log "writing $records lines to $input"
    "$tool" lines "$input" "$records"
fi

# java_command MAIN ARGS...: Kafka's JVM flags (bin/connect-*.sh and
# kafka-run-class.sh) on the Java worker's classpath, into `command`.
java_command() {
    command=(java -Xms256M -Xmx2G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
        -XX:MaxInlineLevel=15 -Djava.awt.headless=true
        -Dlog4j2.configurationFile="$rest_java/log4j2.properties"
        -Dkafka.logs.dir="$work/run/java-logs"
        -cp "$rest_java/target/lib/*:$work/compat"
        "$@")
}

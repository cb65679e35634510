#!/usr/bin/env bash
# A real Apache Kafka 4.4.0 broker for tests: one KRaft node (broker and
# controller) on 127.0.0.1, on free ports, with transactions.
#
#   tools/real-kafka/broker.sh start [--sasl] [--dir DIR] [--owner PID]
#       fetches the jars with Maven (once; they stay in ~/.m2), formats a
#       fresh data dir, starts the broker, waits until it answers a metadata
#       request and prints `bootstrap.servers=127.0.0.1:PORT` on stdout.
#       --sasl adds a second listener SASL_PLAINTEXT://127.0.0.1:PORT2 with
#       SASL/PLAIN (users admin/admin-secret and alice/alice-secret) and
#       prints `sasl.bootstrap.servers=127.0.0.1:PORT2` too.
#       The broker stops by itself when process PID (default: the caller)
#       exits, so a killed test run leaves nothing behind.
#   tools/real-kafka/broker.sh stop [--dir DIR]
#       stops it cleanly (SIGTERM, controlled shutdown), SIGKILL after 30 s.
#   tools/real-kafka/broker.sh restart [--dir DIR] [--owner PID]
#       stops it and starts it again on the same ports and data (for
#       drills: clients reconnect to the same address, topics survive).
#   tools/real-kafka/broker.sh classpath
#       prints the broker's classpath (fetching the jars if needed).
#
# DIR defaults to target/real-kafka in the repository; it holds the data,
# server.log, the pid and `env` (KAFKA_BOOTSTRAP_SERVERS=...).
# Needs Java 17+ and Maven; timings go to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir="$repo/target/real-kafka"
owner=$PPID
sasl=0
cmd=${1:-}
[ $# -gt 0 ] && shift
while [ $# -gt 0 ]; do
    case "$1" in
        # Absolute: the script runs Maven and the broker from other directories.
        --dir) dir=$(realpath -m "$2"); shift 2 ;;
        --owner) owner=$2; shift 2 ;;
        --sasl) sasl=1; shift ;;
        *) echo "broker.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

log() { echo "broker.sh: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The classpath, resolved by Maven once per pom (the jars live in ~/.m2).
classpath() {
    local cache="$dir/classpath.txt" stamp="$dir/classpath.pom-sha"
    local sha
    sha=$(sha256sum "$here/pom.xml" | cut -d' ' -f1)
    mkdir -p "$dir"
    if [ -s "$cache" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sha" ] \
        && tr ':' '\n' <"$cache" | while read -r jar; do [ -f "$jar" ] || exit 1; done; then
        cat "$cache"
        return
    fi
    command -v mvn >/dev/null || { log "Maven (mvn) is not installed"; return 1; }
    log "resolving Apache Kafka 4.4.0 with Maven (first run downloads about 60 MB)"
    if ! mvn -B -q -f "$here/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$cache.tmp" >"$dir/maven.log" 2>&1; then
        log "Maven could not resolve the broker's jars:"
        tail -20 "$dir/maven.log" >&2
        return 1
    fi
    mv "$cache.tmp" "$cache"
    echo "$sha" >"$stamp"
    cat "$cache"
}

# A port nobody listens on now (the kernel's pick for port 0).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A Kafka cluster id: 16 random bytes in unpadded base64url, not starting
# with '-' (Kafka's own Uuid.randomUuid rule, so CLIs can take it).
cluster_id() {
    python3 -c '
import base64, os
while True:
    s = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
    if not s.startswith("-"):
        print(s)
        break'
}

stop() {
    local pidfile="$dir/broker.pid" pid
    [ -f "$pidfile" ] || { log "no broker recorded in $dir"; return 0; }
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        local t0
        t0=$(now)
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "broker $pid ignored SIGTERM for 30 s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        log "stopped broker $pid in $(since "$t0") s"
    fi
    rm -f "$pidfile" "$dir/env"
}

start() {
    command -v java >/dev/null || { log "Java is not installed"; return 1; }
    local t0 cp port cport data id pid
    t0=$(now)
    if [ -f "$dir/broker.pid" ] && kill -0 "$(cat "$dir/broker.pid")" 2>/dev/null; then
        log "a broker is already running from $dir: stop it first"
        return 1
    fi
    cp=$(classpath)
    port=$(free_port)
    cport=$(free_port)
    while [ "$cport" = "$port" ]; do cport=$(free_port); done
    local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    local protocols="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    local sasl_props="" sport
    if [ "$sasl" = 1 ]; then
        sport=$(free_port)
        while [ "$sport" = "$port" ] || [ "$sport" = "$cport" ]; do sport=$(free_port); done
        listeners="$listeners,SASL_PLAINTEXT://127.0.0.1:$sport"
        protocols="$protocols,SASL_PLAINTEXT:SASL_PLAINTEXT"
        sasl_props="sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";"
    fi
    data="$dir/data"
    rm -rf "$data" "$dir/logs"
    mkdir -p "$data" "$dir/logs"
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$listeners
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
$sasl_props
log.dirs=$data
num.partitions=1
default.replication.factor=1
# One node: every internal topic with one replica, or groups and
# transactions never become available.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Fewer coordinator partitions: the first group or transaction of a run
# waits for these to be created.
offsets.topic.num.partitions=4
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
# Tests may use short sessions, so a killed member leaves the group fast.
group.min.session.timeout.ms=1000
EOF
    id=$(cluster_id)
    java -Dlog4j2.configurationFile="$here/tools-log4j2.properties" -cp "$cp" \
        kafka.tools.StorageTool format --standalone --ignore-formatted \
        --cluster-id "$id" --config "$dir/server.properties" >"$dir/logs/format.log" 2>&1 \
        || { log "formatting failed:"; cat "$dir/logs/format.log" >&2; return 1; }
    launch "$cp" "$port" "$t0" "cluster $id"
}

# Stop the broker of DIR and start it again from its server.properties and
# data: same ports, same topics.
restart() {
    local t0 cp port
    t0=$(now)
    [ -f "$dir/server.properties" ] || { log "no broker was started from $dir"; return 1; }
    cp=$(classpath)
    port=$(sed -n 's#^listeners=PLAINTEXT://127.0.0.1:\([0-9]*\),.*#\1#p' "$dir/server.properties")
    stop
    mv -f "$dir/logs/server.log" "$dir/logs/server.before-restart.log" 2>/dev/null || true
    launch "$cp" "$port" "$t0" "restarted"
}

# Run the broker of DIR in the background and wait until it serves.
launch() {
    local cp=$1 port=$2 t0=$3 what=$4 pid
    # setsid: a Ctrl-C meant for the caller's tests does not reach the
    # broker; the watchdog below stops it when the owner goes away.
    setsid java -Xms256m -Xmx1g -XX:+UseG1GC \
        -Dlog4j2.configurationFile="$here/log4j2.properties" \
        -Dkafka.logs.dir="$dir/logs" -cp "$cp" \
        kafka.Kafka "$dir/server.properties" >"$dir/logs/stdout.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/broker.pid"
    if [ "$owner" != 0 ]; then
        # Watchdog: when the owner exits, stop the broker as `stop` does.
        (
            while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
            if kill -0 "$pid" 2>/dev/null; then
                kill -TERM "$pid" 2>/dev/null || true
                for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
                kill -KILL "$pid" 2>/dev/null || true
            fi
        ) </dev/null >/dev/null 2>&1 &
        disown
    fi
    # Ready when the broker says so and then answers a metadata request.
    local deadline=$((SECONDS + 120))
    until grep -q "Kafka Server started" "$dir/logs/server.log" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "the broker exited during start-up:"
            tail -30 "$dir/logs/stdout.log" "$dir/logs/server.log" >&2 2>/dev/null || true
            rm -f "$dir/broker.pid"
            return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log "the broker did not start within 120 s (log: $dir/logs/server.log)"
            stop
            return 1
        fi
        sleep 0.1
    done
    if command -v kcat >/dev/null; then
        until kcat -b "127.0.0.1:$port" -L -m 5 >/dev/null 2>&1; do
            [ $SECONDS -lt $deadline ] || { log "the broker does not answer metadata requests"; stop; return 1; }
            sleep 0.2
        done
    fi
    echo "KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:$port" >"$dir/env"
    log "Apache Kafka 4.4.0 (pid $pid, $what) ready in $(since "$t0") s; data and logs in $dir"
    echo "bootstrap.servers=127.0.0.1:$port"
    local sport
    sport=$(sed -n 's#^listeners=.*SASL_PLAINTEXT://127.0.0.1:\([0-9]*\).*#\1#p' "$dir/server.properties")
    if [ -n "$sport" ]; then
        echo "KAFKA_SASL_BOOTSTRAP_SERVERS=127.0.0.1:$sport" >>"$dir/env"
        echo "sasl.bootstrap.servers=127.0.0.1:$sport"
    fi
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    restart) restart ;;
    classpath) classpath ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac

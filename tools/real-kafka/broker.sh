#!/usr/bin/env bash
# A real Apache Kafka 4.4.0 broker for tests: one KRaft node (broker and
# controller) on 127.0.0.1, on free ports, with transactions.
#
#   tools/real-kafka/broker.sh start [--sasl] [--tls] [--dir DIR] [--owner PID]
#       fetches the jars with Maven (once; they stay in ~/.m2), formats a
#       fresh data dir, starts the broker, waits until it answers a metadata
#       request and prints `bootstrap.servers=127.0.0.1:PORT` on stdout.
#       --sasl adds a second listener SASL_PLAINTEXT://127.0.0.1:PORT2 with
#       SASL/PLAIN (users admin/admin-secret and alice/alice-secret) and
#       prints `sasl.bootstrap.servers=127.0.0.1:PORT2` too.
#       --tls adds SSL://127.0.0.1:PORT3 (mutual TLS: clients must present a
#       certificate of the test CA) and SASL_SSL://127.0.0.1:PORT4 (no client
#       certificate; SASL PLAIN with the users above, SCRAM-SHA-256 and
#       SCRAM-SHA-512 with alice/alice-secret) and prints
#       `ssl.bootstrap.servers=127.0.0.1:PORT3`,
#       `sasl_ssl.bootstrap.servers=127.0.0.1:PORT4` and `tls.dir=DIR/tls`.
#       DIR/tls holds test certificates (made once, kept by restart): ca.pem
#       (the CA to trust), client.pem with client.key (PKCS#8),
#       client-encrypted.key (PKCS#8, password client-key-secret) and
#       client.p12 (password client-p12-secret), and other-ca.pem, an
#       unrelated CA for tests that must fail. The broker's certificate
#       names localhost and 127.0.0.1. librdkafka before 2.6.1 (kcat here
#       has 2.0.2) fails SCRAM against Kafka 4 (it repeats the client
#       nonce in its final message); PLAIN and mutual TLS work with it.
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
# server.log, the pid and `env` (KAFKA_BOOTSTRAP_SERVERS=..., and with the
# options KAFKA_SASL_BOOTSTRAP_SERVERS, KAFKA_SSL_BOOTSTRAP_SERVERS,
# KAFKA_SASL_SSL_BOOTSTRAP_SERVERS, KAFKA_TLS_DIR).
# Needs Java 17+ and Maven (and openssl for --tls); timings go to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir="$repo/target/real-kafka"
owner=$PPID
sasl=0
tls=0
cmd=${1:-}
[ $# -gt 0 ] && shift
while [ $# -gt 0 ]; do
    case "$1" in
        # Absolute: the script runs Maven and the broker from other directories.
        --dir) dir=$(realpath -m "$2"); shift 2 ;;
        --owner) owner=$2; shift 2 ;;
        --sasl) sasl=1; shift ;;
        --tls) tls=1; shift ;;
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
# Picked in 12000-19999: below Linux's ephemeral range (32768 and up), so
# that while `restart` has the broker down, none of the machine's outgoing
# connections (other tests' clients reconnecting) is given the broker's
# port as its own; and apart from the 20000-31999 the tests' workers use.
free_port() {
    python3 -c '
import random, socket
for _ in range(2000):
    p = random.randrange(12000, 20000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free port in 12000-19999")
'
}

# A free port that is none of the arguments (ports picked, not yet bound).
new_port() {
    local p
    while :; do
        p=$(free_port)
        case " $* " in *" $p "*) ;; *) echo "$p"; return ;; esac
    done
}

# Test certificates for the TLS listeners, in DIR/tls: a CA, the broker's
# key and certificate signed by it, a client certificate for mutual TLS (its
# key plain, PKCS#8-encrypted and as PKCS#12, the forms clients are
# configured with) and an unrelated CA for "wrong truststore" tests. Made
# once: a restart or a new start on the same DIR keeps them, so clients
# configured from the files stay valid.
tls_files="ca.pem ca.key broker.pem broker.key broker-keystore.pem client.pem client.key client-encrypted.key client.p12 other-ca.pem"
tls_certs() {
    local tls="$dir/tls" f missing=0
    for f in $tls_files; do [ -s "$tls/$f" ] || missing=1; done
    [ "$missing" = 1 ] || return 0
    command -v openssl >/dev/null || { log "openssl is not installed (needed for --tls)"; return 1; }
    local t0
    t0=$(now)
    rm -rf "$tls.tmp"
    mkdir -p "$tls.tmp"
    # set -e does not work in a subshell followed by `||`: run it alone and
    # take its status. Its output goes to a log, shown if it fails.
    local rc=0
    set +e
    (
        set -e
        cd "$tls.tmp"
        # Our own extension sections instead of the system openssl.cnf, so
        # the certificates have the same extensions on every machine.
        cat >ext.cnf <<'CNF'
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[broker]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
CNF
        # genpkey writes PKCS#8 ("BEGIN PRIVATE KEY"), the only key form
        # Kafka's PEM keystore reads.
        key() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1"; }
        # The four keys in parallel: RSA key generation is most of the time.
        local pids=() p
        for f in ca broker client other-ca; do key "$f.key" & pids+=($!); done
        for p in "${pids[@]}"; do wait "$p"; done
        ca() { # NAME SUBJECT
            openssl req -new -x509 -key "$1.key" -out "$1.pem" -days 3650 -sha256 \
                -subj "$2" -config ext.cnf -extensions ca
        }
        leaf() { # NAME SUBJECT
            openssl req -new -key "$1.key" -subj "$2" -config ext.cnf -out "$1.csr"
            openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key \
                -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
                -extfile ext.cnf -extensions "$1" -out "$1.pem"
        }
        ca ca "/O=connect-rs tests/CN=connect-rs test CA"
        leaf broker "/O=connect-rs tests/CN=localhost"
        leaf client "/O=connect-rs tests/CN=client"
        ca other-ca "/O=connect-rs tests/CN=connect-rs other CA"
        rm other-ca.key
        # Kafka's PEM keystore file: the private key, then the chain.
        cat broker.key broker.pem ca.pem >broker-keystore.pem
        openssl pkcs8 -topk8 -in client.key -out client-encrypted.key \
            -v2 aes-256-cbc -v2prf hmacWithSHA256 -passout pass:client-key-secret
        openssl pkcs12 -export -in client.pem -inkey client.key -name client \
            -out client.p12 -passout pass:client-p12-secret
        rm ./*.csr ext.cnf
    ) >"$dir/tls-openssl.log" 2>&1
    rc=$?
    set -e
    if [ "$rc" != 0 ]; then
        log "making the TLS certificates failed:"
        cat "$dir/tls-openssl.log" >&2
        rm -rf "$tls.tmp"
        return 1
    fi
    rm -f "$dir/tls-openssl.log"
    rm -rf "$tls"
    mv "$tls.tmp" "$tls"
    log "TLS test certificates made in $(since "$t0") s in $tls"
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
    cport=$(new_port "$port")
    local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    local protocols="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    local sasl_props="" sport
    # The same PLAIN users on the SASL_PLAINTEXT and SASL_SSL listeners.
    local plain_jaas='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
    if [ "$sasl" = 1 ]; then
        sport=$(new_port "$port" "$cport")
        listeners="$listeners,SASL_PLAINTEXT://127.0.0.1:$sport"
        protocols="$protocols,SASL_PLAINTEXT:SASL_PLAINTEXT"
        sasl_props="sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=$plain_jaas"
    fi
    local tls_props="" tport ssport scram=()
    if [ "$tls" = 1 ]; then
        tls_certs
        tport=$(new_port "$port" "$cport" "${sport:-}")
        ssport=$(new_port "$port" "$cport" "${sport:-}" "$tport")
        listeners="$listeners,SSL://127.0.0.1:$tport,SASL_SSL://127.0.0.1:$ssport"
        protocols="$protocols,SSL:SSL,SASL_SSL:SASL_SSL"
        local l ks="$dir/tls/broker-keystore.pem" ca="$dir/tls/ca.pem"
        for l in ssl sasl_ssl; do
            # Per listener, as the client-auth rule differs; PEM files, so
            # no keytool and no JKS passwords. The keystore file holds the
            # unencrypted PKCS#8 key and the chain, so no ssl.key.password.
            tls_props="$tls_props
listener.name.$l.ssl.keystore.type=PEM
listener.name.$l.ssl.keystore.location=$ks
listener.name.$l.ssl.truststore.type=PEM
listener.name.$l.ssl.truststore.location=$ca"
        done
        # Kafka wants a JAAS entry for every enabled mechanism of a listener;
        # SCRAM's takes no options (the credentials live in the metadata log,
        # written by the format below).
        tls_props="$tls_props
listener.name.ssl.ssl.client.auth=required
listener.name.sasl_ssl.ssl.client.auth=none
listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=$plain_jaas
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
        scram=(--add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
            --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]')
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
$tls_props
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
        --cluster-id "$id" --config "$dir/server.properties" ${scram[@]+"${scram[@]}"} \
        >"$dir/logs/format.log" 2>&1 \
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
    # The broker reads its certificates at start: remake them if removed.
    if grep -q '^listener.name.ssl.ssl.keystore.location=' "$dir/server.properties"; then
        tls_certs
    fi
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
    # SSL and SASL_SSL: the ',' keeps SASL_SSL from matching as SSL.
    local tport ssport
    tport=$(sed -n 's#^listeners=.*,SSL://127.0.0.1:\([0-9]*\).*#\1#p' "$dir/server.properties")
    ssport=$(sed -n 's#^listeners=.*,SASL_SSL://127.0.0.1:\([0-9]*\).*#\1#p' "$dir/server.properties")
    if [ -n "$tport" ]; then
        {
            echo "KAFKA_SSL_BOOTSTRAP_SERVERS=127.0.0.1:$tport"
            echo "KAFKA_SASL_SSL_BOOTSTRAP_SERVERS=127.0.0.1:$ssport"
            echo "KAFKA_TLS_DIR=$dir/tls"
        } >>"$dir/env"
        echo "ssl.bootstrap.servers=127.0.0.1:$tport"
        echo "sasl_ssl.bootstrap.servers=127.0.0.1:$ssport"
        echo "tls.dir=$dir/tls"
    fi
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    restart) restart ;;
    classpath) classpath ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac

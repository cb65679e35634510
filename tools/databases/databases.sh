#!/usr/bin/env bash
# Real PostgreSQL and MariaDB servers for the connectors' tests, each a
# fresh instance in its own data directory on a free loopback port, so a
# run never meets a previous run's tables, slots or users.
#
#   tools/databases/databases.sh start [--dir DIR]
#       initialises and starts both servers and prints, on stdout, the
#       lines the tests read (also written to DIR/env):
#         JDBC_TEST_POSTGRES_URL=jdbc:postgresql://127.0.0.1:PORT/connect_test
#         JDBC_TEST_MARIADB_URL=jdbc:mariadb://127.0.0.1:PORT/connect_test
#       PostgreSQL: user `postgres`, no password (trust on loopback, also
#       for replication), `wal_level=logical`, a bounded
#       `max_slot_wal_keep_size` (a forgotten slot must not fill the disk).
#       MariaDB: user `connect`, password `connect`, all privileges on
#       connect_test; binary log in ROW format with full images and
#       metadata (what change data capture reads).
#   tools/databases/databases.sh stop [--dir DIR]
#       stops both (fast shutdown) and leaves the data for a post-mortem.
#   tools/databases/databases.sh crash postgres|mariadb [--dir DIR]
#       kills one server the hard way (PostgreSQL's immediate shutdown,
#       which skips the checkpoint like a crash; SIGKILL for MariaDB) and
#       starts it again on the same port and data, for drills: clients see
#       their connections drop and the server come back with crash recovery.
#
# Needs Debian's postgresql (15) and mariadb-server packages; .ci/run
# installs them. Run as root (the servers themselves run as the postgres
# and mysql users) or as a user who owns DIR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir="$repo/target/databases"
cmd=${1:-}
[ $# -gt 0 ] && shift
which_server=""
if [ "$cmd" = crash ]; then
    which_server=${1:-}
    [ $# -gt 0 ] && shift
fi
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$(realpath -m "$2"); shift 2 ;;
        *) echo "databases.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

# Run a command as `user` when we are root (the servers refuse root).
as() {
    local user=$1
    shift
    if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_postgres() {
    local data="$dir/postgres" port
    [ -n "$pg_bin" ] || { echo "databases.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; return 1; }
    rm -rf "$data"
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres: "$data"
    as postgres "$pg_bin/initdb" -D "$data" -A trust -U postgres -E UTF8 >"$dir/postgres-initdb.log" 2>&1
    port=$(free_port)
    cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$data'
wal_level = logical
max_wal_senders = 20
max_replication_slots = 20
max_slot_wal_keep_size = 1GB
fsync = off
full_page_writes = off
EOF
    as postgres "$pg_bin/pg_ctl" -D "$data" -l "$data/postgres.log" -w -t 60 start >/dev/null
    as postgres "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U postgres -q -c 'CREATE DATABASE connect_test' >/dev/null
    echo "JDBC_TEST_POSTGRES_URL=jdbc:postgresql://127.0.0.1:$port/connect_test"
}

# Starts mariadbd on the data dir and port of an initialised instance and
# waits until it answers.
run_mariadb() {
    local data="$dir/mariadb" i
    (as mysql mariadbd --no-defaults --datadir="$data/db" --socket="$data/mariadb.sock" \
        --pid-file="$data/mariadb.pid" --bind-address=127.0.0.1 --port="$(cat "$data/port")" \
        --log-bin=mariadb-bin --server-id=1 --binlog-format=ROW --binlog-row-image=FULL \
        --binlog-row-metadata=FULL --innodb-flush-log-at-trx-commit=2 \
        >>"$dir/mariadb.log" 2>&1 &)
    for i in $(seq 1 120); do
        mariadb --no-defaults -uroot --socket="$data/mariadb.sock" -e 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}

start_mariadb() {
    local data="$dir/mariadb" port i
    command -v mariadbd >/dev/null || { echo "databases.sh: MariaDB is not installed (apt-get install mariadb-server)" >&2; return 1; }
    rm -rf "$data"
    mkdir -p "$data/db"
    [ "$(id -u)" = 0 ] && chown -R mysql: "$data"
    mariadb-install-db --no-defaults --user=mysql --datadir="$data/db" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/mariadb-install.log" 2>&1
    port=$(free_port)
    echo "$port" >"$data/port"
    run_mariadb
    mariadb --no-defaults -uroot --socket="$data/mariadb.sock" -e "
        CREATE DATABASE connect_test;
        CREATE USER 'connect'@'%' IDENTIFIED BY 'connect';
        CREATE USER 'connect'@'localhost' IDENTIFIED BY 'connect';
        GRANT ALL PRIVILEGES ON *.* TO 'connect'@'%';
        GRANT ALL PRIVILEGES ON *.* TO 'connect'@'localhost';" ||
        { echo "databases.sh: MariaDB did not start; see $dir/mariadb.log" >&2; return 1; }
    echo "JDBC_TEST_MARIADB_URL=jdbc:mariadb://127.0.0.1:$port/connect_test"
}

case "$cmd" in
    start)
        "$0" stop --dir "$dir" >/dev/null 2>&1 || true
        mkdir -p "$dir"
        chmod 755 "$dir"
        t0=$(date +%s)
        { start_postgres; start_mariadb; } | tee "$dir/env"
        echo "databases.sh: both servers up in $(( $(date +%s) - t0 )) s" >&2
        ;;
    crash)
        case "$which_server" in
            postgres)
                as postgres "$pg_bin/pg_ctl" -D "$dir/postgres" -m immediate -w stop >/dev/null
                as postgres "$pg_bin/pg_ctl" -D "$dir/postgres" -l "$dir/postgres/postgres.log" -w -t 60 start >/dev/null
                ;;
            mariadb)
                pid=$(cat "$dir/mariadb/mariadb.pid")
                kill -9 "$pid"
                for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
                rm -f "$dir/mariadb/mariadb.sock"
                run_mariadb
                ;;
            *)
                echo "usage: databases.sh crash postgres|mariadb [--dir DIR]" >&2
                exit 2
                ;;
        esac
        ;;
    stop)
        if [ -f "$dir/postgres/postmaster.pid" ] && [ -n "$pg_bin" ]; then
            as postgres "$pg_bin/pg_ctl" -D "$dir/postgres" -m fast -w stop >/dev/null || true
        fi
        if [ -f "$dir/mariadb/mariadb.pid" ]; then
            pid=$(cat "$dir/mariadb/mariadb.pid")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        ;;
    *)
        echo "usage: databases.sh start|stop|crash postgres|crash mariadb [--dir DIR]" >&2
        exit 2
        ;;
esac

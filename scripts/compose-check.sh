#!/usr/bin/env bash
# Runs docker-compose.yml for real, as a user runs it, on a machine with no Docker engine and no
# container registry:
#
#   - podman (Debian's package) serves the Docker API on a private unix socket, with its own image
#     store under ~/.cache/agentwall/compose/ (nothing else on the machine is touched);
#   - Docker Compose v2, the Go plugin inside Debian trixie's `docker-compose` package, drives it;
#   - the images the files name (redis, postgres, jaeger, phoenix, debian, rust) are stand-ins built
#     here from Debian's packages (a debootstrap of the suite, scripts/compose-check/standins/) and
#     tagged with those names; docs/results/deploy.md says how they differ from the real ones;
#   - the repository is copied to a scratch folder owned by a user who is not root (uid 4242), the
#     way a user's clone is, and every command runs there.
#
#   scripts/compose-check.sh                 fast build: binaries built on this machine (target/debug,
#                                            or --binaries DIR) copied into the Dockerfiles' runtime
#                                            stages; what CI runs
#   scripts/compose-check.sh --dockerfile    the Dockerfiles' own builder stages (cargo inside the
#                                            image, crates vendored into the build context with
#                                            `cargo vendor`, since the build has no registry)
#
# What it runs, and what must hold for it to pass:
#   1. docker compose up --build --exit-code-from judge
#      the judge exits 0; ./runs/<id>/ holds the report, owned by the checkout's owner; agent-server's
#      /readyz answered with Redis and Postgres up; the OTLP endpoint (Jaeger's stand-in) received
#      spans from both the judge and agent-server;
#   2. the `phoenix` profile, without ./runs (the engine creates it, as root) and with
#      AGENTWALL_UID/AGENTWALL_GID set: the run is owned by that uid, and Phoenix's stand-in received
#      spans from both services;
#   3. deploy/compose.override.example.yml (the judge against another endpoint, here the stack's own
#      agent-server started on its own) and `docker compose run --rm judge apps ...` from docs/deploy.md;
#   4. the build context: every file `git ls-files` lists under a crate's src/ survives .dockerignore,
#      as the engine itself applies it.
#
# Runs as root (podman serves rootful containers; CI is root); installs what is missing with apt-get.
# The ports the stack publishes (8080, 4317, 4318, 16686, 6006 on 127.0.0.1) must be free.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

MODE=fast
BINARIES=$ROOT/target/debug
CHECK_UID=4242
while [ $# -gt 0 ]; do
  case $1 in
    --dockerfile) MODE=dockerfile ;;
    --binaries) BINARIES=$(realpath "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compose-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/agentwall/compose
mkdir -p "$CACHE"
WORK=$(mktemp -d /tmp/agentwall-compose.XXXXXX)
say() { echo "compose-check: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
started=$SECONDS

# --- 1. tools -------------------------------------------------------------------------------------

if [ "$(id -u)" != 0 ]; then
  fail "run as root: podman serves the stack rootful here (CI runs as root)"
fi
apt_updated=
# shellcheck source=scripts/lib/debian.sh
source "$ROOT/scripts/lib/debian.sh"
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# runc, not Debian 12's default crun 1.8: crun refuses this machine's cgroup layout (v1 controllers
# beside an empty v2 hierarchy: "cgroups in hybrid mode not supported").
for tool in podman runc debootstrap; do
  command -v "$tool" >/dev/null || { say "installing $tool"; apt_install "$tool"; }
done
# Compose reaches each service by its name, so the engine's networks need DNS: netavark with
# aardvark-dns. Without them podman 4.3 falls back to CNI networks, which resolve no names
# (agent-server then waits for "postgres" until its start-up budget runs out).
for helper in netavark aardvark-dns; do
  [ -x "/usr/lib/podman/$helper" ] || { say "installing $helper"; apt_install "$helper"; }
done

# Docker Compose v2 is not in Debian 12 (its docker-compose is the Python v1); trixie's package
# carries the v2 plugin. Fetched once with apt-get from the machine's own Debian mirror, with a
# temporary source list for trixie, and unpacked into the cache: nothing is installed system-wide.
PLUGIN=$CACHE/cli-plugins/docker-compose
if ! [ -x "$PLUGIN" ]; then
  say "fetching Docker Compose v2 (Debian trixie's docker-compose package)"
  apt_dir=$WORK/apt
  mkdir -p "$CACHE/cli-plugins"
  debian_apt "$apt_dir" deb trixie || fail "cannot reach Debian trixie through this machine's mirror"
  (cd "$apt_dir" && apt-get "${DEBIAN_APT[@]}" download docker-compose >/dev/null)
  dpkg-deb -x "$apt_dir"/docker-compose_*.deb "$apt_dir/unpacked"
  install -m 0755 "$apt_dir/unpacked/usr/libexec/docker/cli-plugins/docker-compose" "$PLUGIN"
fi
# `docker compose` with the Docker CLI where there is one (this kind of machine ships the client),
# else the plugin binary on its own (a v2 plugin also runs standalone).
export DOCKER_CONFIG=$WORK/docker-config
mkdir -p "$DOCKER_CONFIG/cli-plugins"
ln -s "$PLUGIN" "$DOCKER_CONFIG/cli-plugins/docker-compose"
echo '{}' > "$DOCKER_CONFIG/config.json"
# COMPOSE_BIN is the same as a program, for `timeout` (which cannot run a function).
if command -v docker >/dev/null; then
  docker() { command docker "$@"; }
  COMPOSE_BIN=("$(command -v docker)" compose)
else
  docker() { [ "$1" = compose ] || fail "no docker CLI for: docker $*"; shift; "$PLUGIN" "$@"; }
  COMPOSE_BIN=("$PLUGIN")
fi
say "$(docker compose version)"
# Every compose command of the runs gets a deadline: one that hangs (an engine that stops
# answering, a build or a healthcheck that never ends) fails the check with its log, instead of
# taking all of CI's time. A passing run takes a few minutes; COMPOSE_CHECK_DEADLINE changes it.
DEADLINE=${COMPOSE_CHECK_DEADLINE:-900}
within() { timeout --kill-after=30 "$1" "${@:2}"; }
# Fails the check for a compose command that exited $1, with the end of its log ($2) shown here
# (CI shows what the check prints, not the files it keeps).
step_failed() {
  local status=$1 log=$2 what=$3
  say "--- the last 60 lines of $log"
  tail -n 60 "$log" | sed 's/^/    /' >&2
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    fail "$what did not finish within $DEADLINE s ($log)"
  fi
  fail "$what exited $status ($log)"
}

# --- 2. the engine --------------------------------------------------------------------------------

# What this machine needs of podman, none of it in the project's files:
#   - runc (above); cgroupfs, not systemd, manages cgroups (no systemd runs here);
#   - netavark networks (above), whose aardvark-dns resolves the services' names;
#   - events go to a file (no journald);
#   - no default ulimits: podman raises a rootful container's open-files limit to 1048576, above
#     this sandbox's hard limit, and the container fails to start;
#   - healthchecks: podman runs them from systemd timers, so without systemd they never run and
#     `condition: service_healthy` would wait forever; a loop below runs them (`podman healthcheck
#     run`) every 2 seconds instead.
cat > "$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
EOF
export CONTAINERS_CONF=$WORK/containers.conf
# The image store persists (stand-ins are built once); podman ties it to one run root.
podman() { command podman --root "$CACHE/storage" --runroot /run/agentwall-compose "$@"; }
SOCKET=$WORK/podman.sock
# Started without the function, so that $! is podman itself (the cleanup stops it by that PID).
start_engine() {
  command podman --root "$CACHE/storage" --runroot /run/agentwall-compose system service --time=0 "unix://$SOCKET" \
    >> "$WORK/podman-service.log" 2>&1 &
  service_pid=$!
  for _ in $(seq 50); do [ -S "$SOCKET" ] && return; sleep 0.2; done
  fail "podman's API socket did not appear ($WORK/podman-service.log)"
}
# podman 4.3 builds inside its API service and keeps a `--mount=type=cache,sharing=locked` cache
# locked after the build that used it: the next build with the same cache waits forever. The check
# restarts the service between the Dockerfiles' two builds.
restart_engine() {
  kill "$service_pid" && wait "$service_pid" 2>/dev/null || true
  rm -f "$SOCKET"
  start_engine
}
health_pid=
service_pid=
cleanup() {
  local status=$?
  if [ "$status" != 0 ] && [ -S "$SOCKET" ] && [ -d "$WORK/repo" ]; then
    (cd "$WORK/repo" && within 120 "${COMPOSE_BIN[@]}" --profile phoenix logs --no-color --timestamps) > "$WORK/containers.log" 2>&1 || true
  fi
  if [ -S "$SOCKET" ] && [ -d "$WORK/repo" ]; then
    (cd "$WORK/repo" && within 120 "${COMPOSE_BIN[@]}" --profile phoenix down --volumes --remove-orphans >/dev/null 2>&1) || true
  fi
  [ -z "$health_pid" ] || kill "$health_pid" 2>/dev/null || true
  [ -z "$service_pid" ] || kill "$service_pid" 2>/dev/null || true
  wait "$service_pid" 2>/dev/null || true
  if [ "$status" != 0 ]; then
    say "kept $WORK for a look (the containers' logs: $WORK/containers.log)"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
start_engine
export DOCKER_HOST=unix://$SOCKET
# podman's Docker API has no BuildKit, and compose's own buildx would start a BuildKit container
# from an image no registry here serves: DOCKER_BUILDKIT=0 sends builds to the engine's /build
# endpoint, where podman builds with buildah (which honours the Dockerfiles' cache mounts).
export DOCKER_BUILDKIT=0

(
  while sleep 2; do
    for id in $(podman ps --quiet 2>/dev/null); do
      podman healthcheck run "$id" >/dev/null 2>&1 || true
    done
  done
) &
health_pid=$!

# --- 3. stand-in images ---------------------------------------------------------------------------

STANDINS=$ROOT/scripts/compose-check/standins
label_of() { podman image inspect --format '{{index .Labels "agentwall.standin"}}' "$1" 2>/dev/null || true; }

# The base of every stand-in: a debootstrap of the suite in the image's tag (debian:trixie-slim).
debian_standin() {
  local image=$1 suite recipe
  suite=${image##*:}
  suite=${suite%-slim}
  recipe="debootstrap minbase $suite"
  [ "$(label_of "$image")" = "$recipe" ] && return
  say "building $image: debootstrap --variant=minbase $suite (once per machine)"
  local rootfs=$WORK/rootfs-$suite mirror
  mirror=$(debian_mirror) || fail "no Debian mirror for debootstrap"
  debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" > "$WORK/debootstrap.log" 2>&1 ||
    fail "debootstrap $suite ($WORK/debootstrap.log)"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' --change "LABEL agentwall.standin=\"$recipe\"" \
    - "$image" >/dev/null
  rm -rf "$rootfs"
}

# A stand-in built from a recipe in scripts/compose-check/standins/, rebuilt when the recipe changes.
recipe_standin() {
  local image=$1 recipe=$2 context=$3
  shift 3
  local hash
  hash=$(cat "$STANDINS/$recipe" "$STANDINS"/*.sh "$STANDINS"/*.py | sha256sum | cut -c1-16)
  hash="$recipe $* $hash"
  [ "$(label_of "$image")" = "$hash" ] && return
  say "building the stand-in for $image ($recipe)"
  podman build --quiet --file "$STANDINS/$recipe" --label "agentwall.standin=$hash" "$@" \
    --tag "$image" "$context" >/dev/null
}

rust_standin() {
  local image=$1 context=$WORK/rust-standin sysroot
  sysroot=$(rustc --print sysroot)
  local recipe
  recipe="$(rustc --version) $(sha256sum < "$STANDINS/rust.Containerfile" | cut -c1-16)"
  [ "$(label_of "$image")" = "$recipe" ] && return
  say "building the stand-in for $image from this machine's $(rustc --version) (once per toolchain)"
  mkdir -p "$context/toolchain"
  cp -a "$sysroot/bin" "$sysroot/lib" "$context/toolchain/"
  rm -rf "$context/toolchain/lib/rustlib/src" "$context/toolchain/lib/rustlib/rustc-src"
  podman build --quiet --file "$STANDINS/rust.Containerfile" --label "agentwall.standin=$recipe" \
    --tag "$image" "$context" >/dev/null
  rm -rf "$context"
}

# The images the files name: compose's (every profile) and the Dockerfiles' FROM lines, ARGs resolved.
dockerfile_bases() {
  local file=$1
  awk '
    $1 == "ARG" { split($2, kv, "="); if (kv[2] != "") arg[kv[1]] = kv[2] }
    $1 == "FROM" { image = $2; for (k in arg) gsub("\\$\\{" k "\\}", arg[k], image); print image }
  ' "$file"
}
qualify() {
  case $1 in
    */*/*) echo "$1" ;;
    */*) echo "docker.io/$1" ;;
    *) echo "docker.io/library/$1" ;;
  esac
}

mapfile -t compose_images < <(docker compose --profile phoenix config --images | sort -u)
mapfile -t build_images < <(dockerfile_bases deploy/agent-server.Dockerfile; dockerfile_bases deploy/judge.Dockerfile)
mapfile -t images < <(printf '%s\n' "${build_images[@]}" "${compose_images[@]}" | sort -u)
# The debian base first: every other stand-in is built on it.
for image in "${images[@]}"; do
  case $image in debian:*) debian_standin "$(qualify "$image")" ;; esac
done
for image in "${images[@]}"; do
  full=$(qualify "$image")
  case $image in
    debian:*) ;;
    agentwall/*) ;;  # built by compose from deploy/*.Dockerfile
    rust:*) [ "$MODE" = dockerfile ] && rust_standin "$full" ;;
    redis:*) recipe_standin "$full" redis.Containerfile "$STANDINS" ;;
    pgvector/pgvector:*) recipe_standin "$full" postgres.Containerfile "$STANDINS" ;;
    jaegertracing/*) recipe_standin "$full" otlp.Containerfile "$STANDINS" --build-arg OTLP_PORT=4318 --build-arg UI_PORT=16686 ;;
    arizephoenix/*) recipe_standin "$full" otlp.Containerfile "$STANDINS" --build-arg OTLP_PORT=6006 --build-arg UI_PORT=6006 ;;
    *) fail "no stand-in for the image $image: add a recipe to scripts/compose-check/standins/ and a case here" ;;
  esac
done
say "stand-ins ready ($((SECONDS - started)) s)"

# --- 4. a user's checkout -------------------------------------------------------------------------

REPO=$WORK/repo
mkdir -p "$REPO"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
  [ -e "$file" ] && printf '%s\0' "$file"
done | tar --null -T - -c | tar -C "$REPO" -x
chown -R "$CHECK_UID:$CHECK_UID" "$REPO"
[ -d "$REPO/runs" ] || fail "the repository ships no runs/ folder: compose's bind mount would be created as root"

# The build context as the engine sees it after .dockerignore: every source file of a crate must be
# in it (a pattern that drops one breaks the image build far from its cause).
{
  printf 'FROM docker.io/library/debian:trixie-slim\nCOPY . /context\nRUN cd /context && find . -type f | sort > /files.txt\n'
} > "$WORK/context.Containerfile"
podman build --quiet --file "$WORK/context.Containerfile" --tag localhost/agentwall-context-check "$REPO" >/dev/null
podman run --rm localhost/agentwall-context-check cat /files.txt | sed 's|^\./||' > "$WORK/context-files.txt"
podman image rm localhost/agentwall-context-check >/dev/null
missing=$(cd "$REPO" && git -C "$ROOT" ls-files | grep -E '^([^/]+/)?src/|^([^/]+/)?Cargo\.(toml|lock)$|^benches/' |
  grep -vxF -f "$WORK/context-files.txt" || true)
[ -z "$missing" ] || fail ".dockerignore drops files the build needs: $missing"
say "build context keeps every crate source ($(wc -l < "$WORK/context-files.txt") files)"

# podman 4.3 gives a container created through its Docker API a stop timeout of 0 when none is
# named (Docker's default is 10 s), so `stop` kills at once and agent-server never flushes its last
# spans. The check names Docker's default for every service, in a file of its own.
mkdir -p "$REPO/.compose-check"
{
  echo "services:"
  (cd "$REPO" && docker compose --profile phoenix config --services) | while read -r service; do
    printf '  %s:\n    stop_grace_period: 10s\n' "$service"
  done
} > "$REPO/.compose-check/engine.yml"
COMPOSE_FILES=(-f docker-compose.yml -f .compose-check/engine.yml)
if [ "$MODE" = fast ]; then
  # The Dockerfiles' runtime stages as written; the builder stage replaced by one that copies the
  # binaries built on this machine (glibc 2.36 here, the runtime image's is newer).
  mkdir -p "$REPO/.compose-check/bin"
  for pair in agent-server:agent-server judge:judge; do
    service=${pair%%:*} binary=${pair##*:}
    [ -x "$BINARIES/$binary" ] || fail "$BINARIES/$binary is missing: cargo build --workspace --bins (or --binaries DIR)"
    cp "$BINARIES/$binary" "$REPO/.compose-check/bin/"
    awk -v bin="$binary" '
      $1 == "FROM" { stage++ }
      stage == 1 && $1 == "FROM" { print "FROM docker.io/library/debian:trixie-slim AS builder"; print "COPY .compose-check/bin/" bin " /out/" bin; next }
      stage == 1 { next }
      { print }
    ' "deploy/$service.Dockerfile" > "$REPO/.compose-check/$service.Dockerfile"
  done
  printf 'services:\n  agent-server:\n    build:\n      dockerfile: .compose-check/agent-server.Dockerfile\n  judge:\n    build:\n      dockerfile: .compose-check/judge.Dockerfile\n' \
    > "$REPO/.compose-check/fast.yml"
  COMPOSE_FILES+=(-f .compose-check/fast.yml)
  chown -R "$CHECK_UID:$CHECK_UID" "$REPO/.compose-check"
else
  say "vendoring the crates into the build context (cargo vendor)"
  mkdir -p "$REPO/.cargo"
  # A relative folder, so that the source replacement cargo prints points into the image's /src.
  (cd "$REPO" && cargo vendor --locked --versioned-dirs vendor > .cargo/config.toml 2> "$WORK/vendor.log") ||
    fail "cargo vendor ($WORK/vendor.log)"
fi
compose() { (cd "$REPO" && within "$DEADLINE" "${COMPOSE_BIN[@]}" "${COMPOSE_FILES[@]}" "$@"); }

if [ "$MODE" = dockerfile ]; then
  # The images as deploy/k8s/README.md builds them; compose's builds below then reuse their layers.
  build_started=$SECONDS
  say "docker build -f deploy/agent-server.Dockerfile -t registry.example.com/agentwall/agent-server:0.1.0 ."
  (cd "$REPO" && docker build -f deploy/agent-server.Dockerfile -t registry.example.com/agentwall/agent-server:0.1.0 .) \
    > "$WORK/build-agent-server.log" 2>&1 || fail "the agent-server image did not build ($WORK/build-agent-server.log)"
  say "agent-server image built in $((SECONDS - build_started)) s"
  restart_engine
  build_started=$SECONDS
  say "docker build -f deploy/judge.Dockerfile -t registry.example.com/agentwall/judge:0.1.0 ."
  (cd "$REPO" && docker build -f deploy/judge.Dockerfile        -t registry.example.com/agentwall/judge:0.1.0 .) \
    > "$WORK/build-judge.log" 2>&1 || fail "the judge image did not build ($WORK/build-judge.log)"
  say "judge image built in $((SECONDS - build_started)) s"
  restart_engine
fi

# --- 5. the runs ----------------------------------------------------------------------------------

free_ports() {
  local port
  for port in 8080 4317 4318 16686 6006; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      fail "port $port on 127.0.0.1 is taken: the stack publishes it"
    fi
  done
}

# Polls agent-server's /readyz from the host (through the published port) while a run goes on.
watch_readyz() {
  local out=$1
  (
    for _ in $(seq 600); do
      if curl -fsS -o "$out" http://127.0.0.1:8080/readyz 2>/dev/null; then exit 0; fi
      sleep 1
    done
  ) > /dev/null 2>&1 &
  echo $!
}

check_run() {
  local what=$1 owner=$2 runs=$REPO/runs run
  run=$(find "$runs" -mindepth 1 -maxdepth 1 -type d -newer "$WORK/run-started" -print -quit)
  [ -n "$run" ] || fail "$what: no run directory appeared in ./runs"
  for file in manifest.json results.json report.html junit.xml; do
    [ -s "$run/$file" ] || fail "$what: $run/$file is missing"
  done
  local bad
  bad=$(find "$run" ! -uid "$owner" -print -quit)
  [ -z "$bad" ] || fail "$what: files not owned by uid $owner: $bad"
  say "$what: $(basename "$run") written, owned by uid $owner"
}

check_spans() {
  local what=$1 service=$2 logs stopped
  logs=$(compose --profile phoenix logs --no-color "$service")
  # How agent-server stopped (0: on SIGTERM, its last spans flushed; 137: killed), for the record.
  stopped=$(podman inspect --format '{{.State.ExitCode}}' agentwall-agent-server-1 2>/dev/null || echo "?")
  for sender in judge agent-server; do
    grep -q "spans service=$sender " <<<"$logs" ||
      fail "$what: $service received no span from $sender (agent-server exited $stopped)"
  done
  say "$what: agent-server exited $stopped when the stack stopped"
  say "$what: $service received spans from the judge and agent-server"
}

check_readyz() {
  local what=$1 body=$2
  [ -s "$body" ] || fail "$what: agent-server's /readyz never answered 200"
  python3 - "$body" <<'EOF' || fail "$what: /readyz did not see both backends: $(cat "$body")"
import json, sys
report = json.load(open(sys.argv[1]))
deps = {d["name"]: d["ok"] for d in report["dependencies"]}
assert report["status"] == "ok" and deps.get("redis") and deps.get("postgres"), deps
EOF
  say "$what: /readyz saw Redis and Postgres"
}

# 1. The command users run.
free_ports
touch "$WORK/run-started"
sleep 1
readyz_pid=$(watch_readyz "$WORK/readyz-main.json")
say "run 1: docker compose up --build --exit-code-from judge"
compose up --build --exit-code-from judge > "$WORK/up-main.log" 2>&1 ||
  step_failed $? "$WORK/up-main.log" "run 1: docker compose up --build --exit-code-from judge"
kill "$readyz_pid" 2>/dev/null || true
check_run "run 1" "$CHECK_UID"
check_readyz "run 1" "$WORK/readyz-main.json"
check_spans "run 1" jaeger
compose down --volumes > /dev/null 2>&1
say "run 1 passed ($((SECONDS - started)) s)"

# 2. Phoenix instead of Jaeger; no ./runs, and the owner given.
free_ports
rm -rf "$REPO/runs"
touch "$WORK/run-started"
sleep 1
say "run 2: OTEL_EXPORTER_OTLP_ENDPOINT=http://phoenix:6006 docker compose --profile phoenix up --build --exit-code-from judge"
(export OTEL_EXPORTER_OTLP_ENDPOINT=http://phoenix:6006 AGENTWALL_UID=4343 AGENTWALL_GID=4343
 compose --profile phoenix up --build --exit-code-from judge) > "$WORK/up-phoenix.log" 2>&1 ||
  step_failed $? "$WORK/up-phoenix.log" "run 2: the phoenix profile's run"
check_run "run 2" 4343
check_spans "run 2" phoenix
compose --profile phoenix down --volumes > /dev/null 2>&1
rm -rf "$REPO/runs"
install -d -o "$CHECK_UID" -g "$CHECK_UID" "$REPO/runs"  # the checkout's runs/ again
say "run 2 passed ($((SECONDS - started)) s)"

# 3. The judge against another endpoint (deploy/compose.override.example.yml): here the stack's own
#    agent-server, started on its own first; and the apps suite of docs/deploy.md.
free_ports
touch "$WORK/run-started"
sleep 1
say "run 3: docker compose up --detach agent-server, then the override example and the apps suite"
compose up --build --detach --wait agent-server > "$WORK/up-stack.log" 2>&1 ||
  step_failed $? "$WORK/up-stack.log" "run 3: docker compose up --detach --wait agent-server"
# As deploy/compose.override.example.yml's header gives it (and, in the fast build, the binaries'
# override too, so that --build does not run the Dockerfile's builder stage).
override=(-f docker-compose.yml -f deploy/compose.override.example.yml -f .compose-check/engine.yml)
[ "$MODE" = fast ] && override+=(-f .compose-check/fast.yml)
(cd "$REPO" && TARGET_ENDPOINT=http://agent-server:8080 TARGET_MODEL=agentwall-builtin \
   within "$DEADLINE" "${COMPOSE_BIN[@]}" "${override[@]}" up --build --exit-code-from judge judge) > "$WORK/up-override.log" 2>&1 ||
  step_failed $? "$WORK/up-override.log" "run 3: the override example's judge"
check_run "run 3 (override)" "$CHECK_UID"
python3 - "$REPO/runs" <<'EOF' || fail "run 3: the override's run did not benchmark agent-server with --history full"
import json, pathlib, sys
runs = [json.loads(p.read_text()) for p in pathlib.Path(sys.argv[1]).glob("*/manifest.json")]
assert any("agent-server:8080" in json.dumps(m) and "full" in json.dumps(m) for m in runs), runs
EOF
touch "$WORK/run-started"
sleep 1
compose run --rm judge apps --endpoint http://agent-server:8080 --out /runs > "$WORK/apps.log" 2>&1 ||
  step_failed $? "$WORK/apps.log" "run 3: docker compose run --rm judge apps --endpoint http://agent-server:8080 --out /runs"
check_run "run 3 (apps)" "$CHECK_UID"
compose down --volumes > /dev/null 2>&1
say "passed: every run of docker-compose.yml ($MODE build) in $((SECONDS - started)) s"

# syntax=docker/dockerfile:1
#
# judge: the benchmark CLI. Runs one suite against an endpoint and exits; the run directory is the
# output, so mount a volume on /runs.
#
#   docker build -f deploy/judge.Dockerfile -t agentwall/judge:local .
#   docker run --rm -v "$PWD/runs:/runs" -e JUDGE_ENDPOINT=http://host.docker.internal:8080 agentwall/judge:local
#
# Same two-stage layout and shared cargo cache mounts as deploy/agent-server.Dockerfile (see there).

ARG RUST_VERSION=1.95
ARG DEBIAN_SUITE=trixie

FROM rust:${RUST_VERSION}-slim-${DEBIAN_SUITE} AS builder
WORKDIR /src
COPY . .
RUN --mount=type=cache,id=agentwall-cargo-registry,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,id=agentwall-cargo-git,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,id=agentwall-target,target=/src/target,sharing=locked \
    cargo build --release --locked --package judge-client --bin judge \
 && install -D -m 0755 target/release/judge /out/judge

# No packages are added: the judge's TLS roots are compiled in (webpki-roots) and it needs no shell
# tool. debian slim rather than distroless so that `sh` is there for the Kubernetes merge step
# (globbing part directories) and for debugging a run inside the container.
FROM debian:${DEBIAN_SUITE}-slim AS runtime
RUN groupadd --system --gid 10001 agentwall \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin agentwall \
 && install -d -o 10001 -g 10001 -m 0755 /runs
COPY --from=builder /out/judge /usr/local/bin/judge
# Run as root (docker-compose.yml does), it runs the judge as the owner of /runs; see the script.
COPY deploy/judge-entrypoint.sh /usr/local/bin/judge-entrypoint
WORKDIR /runs
VOLUME ["/runs"]
USER 10001:10001

# The judge is a batch job, not a service: its health is its exit code (0 ok, 2 below
# --fail-under, 3 regression, 1 error). A periodic probe of a process that only makes outgoing
# requests would say nothing, so the healthcheck is explicitly disabled.
HEALTHCHECK NONE

ENTRYPOINT ["/usr/local/bin/judge-entrypoint"]
# Default: the full long-term-memory benchmark of JUDGE_ENDPOINT into /runs/<run-id>/.
CMD ["ltm", "--out", "/runs"]

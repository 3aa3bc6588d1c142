# syntax=docker/dockerfile:1
#
# agent-server: the OpenAI-compatible server with long-term memory.
#
#   docker build -f deploy/agent-server.Dockerfile -t agentwall/agent-server:local .
#
# Build context: the repository root (see /.dockerignore). Needs BuildKit (the default builder of
# Docker 23+ and of `docker compose`) for the cache mounts below.
#
# Stage 1 builds the binary. Dependency caching: the cargo registry and the target directory are
# BuildKit cache mounts shared with deploy/judge.Dockerfile, so a rebuild after a source change
# recompiles only the workspace crates, never the ~400 dependencies. A "copy the manifests, build
# dummy sources, then copy the sources" layer trick was not used: with three workspace members and
# a root package it needs stub files kept in sync by hand, and cache mounts do the same job.
#
# Stage 2 is debian slim with only the binary, ca-certificates (HTTPS to an upstream model) and
# curl (the HEALTHCHECK's HTTP client, see below). The builder and runtime use the same Debian
# suite, so the glibc the binary was linked against is the one it runs with. SQLite is compiled
# into the binary (bundled) and TLS is rustls: no shared library beyond glibc is needed.

ARG RUST_VERSION=1.95
ARG DEBIAN_SUITE=trixie

FROM rust:${RUST_VERSION}-slim-${DEBIAN_SUITE} AS builder
WORKDIR /src
COPY . .
# The slim rust image has gcc and libc6-dev, which the bundled SQLite and ring need.
RUN --mount=type=cache,id=agentwall-cargo-registry,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,id=agentwall-cargo-git,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,id=agentwall-target,target=/src/target,sharing=locked \
    cargo build --release --locked --package agent-server --bin agent-server \
 && install -D -m 0755 target/release/agent-server /out/agent-server

FROM debian:${DEBIAN_SUITE}-slim AS runtime
# Package versions are left to the pinned Debian suite: pinning exact Debian revisions breaks the
# build at the next security update, which is worse than what it protects against.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
# A fixed numeric uid/gid so Kubernetes' runAsNonRoot can verify it and volumes can be chowned to it.
RUN groupadd --system --gid 10001 agentwall \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin agentwall \
 && install -d -o 10001 -g 10001 -m 0750 /data
COPY --from=builder /out/agent-server /usr/local/bin/agent-server

# In a container the server must listen on every interface (its own default is loopback only).
# /data holds the embedded store (the default backend); with REDIS_URL + DATABASE_URL set it is unused.
ENV AGENT_ADDR=0.0.0.0:8080 \
    AGENT_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
USER 10001:10001

# Liveness: GET /healthz. The binary has no "check yourself" subcommand, and a bash /dev/tcp probe
# would be hand-written HTTP, so curl it is (about 1 MB with --no-install-recommends). The port is
# taken from AGENT_ADDR so overriding the address does not break the check. Readiness (/readyz,
# which checks Redis and Postgres) is what docker-compose.yml and Kubernetes gate traffic on.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
    CMD ["sh", "-c", "curl -fsS -o /dev/null \"http://127.0.0.1:${AGENT_ADDR##*:}/healthz\" || exit 1"]

ENTRYPOINT ["/usr/local/bin/agent-server"]

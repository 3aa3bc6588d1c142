#!/bin/sh
# redis stand-in: what the official image's entrypoint does for `redis-server` without a config file.
set -e
if [ "${1:-}" = redis-server ]; then
  shift
  set -- redis-server --protected-mode no "$@"
fi
exec "$@"

#!/bin/sh
# The judge image's entrypoint: runs `judge` with the container's arguments.
#
# Started as root (docker-compose.yml starts it so, because a bind-mounted ./runs belongs to a host
# user the image cannot know), it steps down before the judge runs, as the official database
# images do with their data directory: to AGENTWALL_UID:AGENTWALL_GID when set, otherwise to the
# owner of /runs. The run directories then belong to whoever owns the host folder. Started as any
# other user (the image's own 10001, or Kubernetes' runAsUser), it runs the judge as that user.
set -eu
judge=/usr/local/bin/judge
if [ "$(id -u)" = 0 ] && [ -d /runs ]; then
  uid=${AGENTWALL_UID:-$(stat -c %u /runs)}
  gid=${AGENTWALL_GID:-$(stat -c %g /runs)}
  if [ "$uid" != 0 ]; then
    # A folder the engine created (./runs did not exist) belongs to root: hand it to that user.
    if [ "$(stat -c %u /runs)" = 0 ]; then
      chown "$uid:$gid" /runs
    fi
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$judge" "$@"
  fi
  echo "judge: /runs belongs to root (the engine created it, or it is root's); the run is written as root." >&2
  echo "judge: set AGENTWALL_UID and AGENTWALL_GID (e.g. to \$(id -u) and \$(id -g)) to write it as yourself." >&2
fi
exec "$judge" "$@"

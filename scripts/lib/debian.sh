# Sourced by scripts that fetch Debian packages without installing them (compose-check.sh,
# test-services.sh): apt-get with a private state, lists and cache, from this machine's own mirror.

# The Debian mirror this machine's apt uses for its own release (its address is the machine's,
# never written into the project): deb822 sources first, then a one-line sources.list. Prints
# nothing and fails when there is none.
debian_mirror() {
  local codename mirror
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v RS= -v suite="$codename" '
    $0 ~ "(^|\n)Suites:([^\n]* )?" suite "( |\n|$)" { if (match($0, /URIs: *[^ \n]+/)) { split(substr($0, RSTART, RLENGTH), f, " "); print f[2]; exit } }')
  [ -n "$mirror" ] || mirror=$(awk -v suite="$codename" '$1 == "deb" && $3 == suite {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$mirror" ] || { echo "no Debian mirror for $codename in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list" >&2; return 1; }
  echo "$mirror"
}

# debian_apt DIR TYPE SUITE [SUITE...]: prepares DIR as a private apt (TYPE deb or deb-src, the
# given suites of the machine's mirror, signatures checked with Debian's archive keyring) and
# updates its lists; then `apt-get "${DEBIAN_APT[@]}" ...` uses it. Nothing system-wide changes.
debian_apt() {
  local dir=$1 type=$2 mirror
  shift 2
  mirror=$(debian_mirror) || return 1
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/sources"
  printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$type" "$mirror" "$*" > "$dir/sources/agentwall.sources"
  DEBIAN_APT=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$dir/sources"
              -o "Dir::State::lists=$dir/lists" -o "Dir::Cache::archives=$dir/archives"
              -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
  apt-get "${DEBIAN_APT[@]}" update -qq
}

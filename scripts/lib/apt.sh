# Debian package installs shared by the scripts (source it; bash only).
#
#   apt_missing PKG...          prints the packages of PKG... not installed, one line
#   apt_install PKG...          installs the missing ones or fails (what a build cannot do without)
#   apt_install_optional LABEL WHO PKG...
#                               installs the missing ones for tests that skip without them: it
#                               never fails, says why when it cannot (no apt, not root and no
#                               password-less sudo, no network), and remembers a failed install
#                               for an hour in ~/.cache/superfluid/LABEL.failed so that make test
#                               offline does not wait on apt every time. WHO names what skips.

apt_missing() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[*]}"
}

apt_install() {
  local missing
  missing=$(apt_missing "$@")
  [ -n "$missing" ] || return 0
  local sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  # shellcheck disable=SC2086 # missing is a list of package names
  $sudo_cmd apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

apt_install_optional() {
  local label="$1" who="$2"
  shift 2
  local missing
  missing=$(apt_missing "$@")
  [ -n "$missing" ] || return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$label: apt-get is not available; $who will skip (install $missing to run them)"
    return 0
  fi
  local sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! sudo -n true 2>/dev/null; then
      echo "$label: not root and no password-less sudo; $who will skip (sudo apt-get install $missing)"
      return 0
    fi
    sudo_cmd="sudo -n"
  fi
  # No HOME (a bare environment) or a cache folder that cannot be made is no reason to fail.
  local failed="${XDG_CACHE_HOME:-${HOME:-${TMPDIR:-/tmp}}/.cache}/superfluid/$label.failed"
  mkdir -p "${failed%/*}" 2>/dev/null || failed="${TMPDIR:-/tmp}/superfluid-$label.failed"
  if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
    echo "$label: installing $missing failed less than an hour ago (log: $failed); $who will skip (rm $failed to retry now)"
    return 0
  fi
  echo "$label: installing $missing for $who (once)"
  # shellcheck disable=SC2086
  if { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends $missing; } >"$failed" 2>&1; then
    rm -f "$failed"
  else
    echo "$label: apt-get install $missing failed (log: $failed); $who will skip"
  fi
  return 0
}

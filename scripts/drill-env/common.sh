# Shared by the drill-env scripts (sourced, not run). Locations can be moved with the variables
# below; the lab (lab/lab) reads KFAILD_PODMAN_ROOTFS with the same default.
drill_state=${KFAILD_DRILL_ENV_DIR:-/run/kfaild-drill-env}
podman_socket=${KFAILD_PODMAN_SOCKET:-/run/kfaild-podman.sock}
podman_rootfs=${KFAILD_PODMAN_ROOTFS:-/run/kfaild-podman/rootfs}
sshd_dir=${KFAILD_SSHD_DIR:-${KFAILD_CACHE:-$HOME/.cache/kfaild}/sshd}
sshd_port=${KFAILD_SSHD_PORT:-2222}

log() { printf '[drill-env] %s\n' "$*" >&2; }
die() { printf '[drill-env] error: %s\n' "$*" >&2; exit 1; }

# Installs the Debian packages that are missing; apt-get update only when something is.
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ $(id -u) == 0 ]] || die "missing packages ${missing[*]}: run this as root or install them"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# True when process $1 is alive and its command line contains $2.
pid_alive() {
  [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] || return 1
  tr '\0' ' ' </proc/"$1"/cmdline | grep -qF -- "$2"
}

# True when the pid in file $1 is alive and its command line contains $2.
pid_file_alive() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  pid_alive "$pid" "$2"
}

# Sends SIGTERM to process $1 if it is still the process named $2, waits up to 10 s, then
# SIGKILL.
stop_pid() {
  local pid=$1 what=$2 i
  pid_alive "$pid" "$what" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pid_alive "$pid" "$what" || break
    sleep 0.1
  done
  if pid_alive "$pid" "$what"; then
    log "$what (pid $pid) ignored SIGTERM; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  log "stopped $what (pid $pid)"
}

# stop_pid for the pid in file $1; removes the pid file.
stop_pid_file() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && stop_pid "$pid" "$2"
  rm -f "$1"
}

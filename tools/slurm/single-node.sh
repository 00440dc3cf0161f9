#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests and CI. Run as root.
#
#   tools/slurm/single-node.sh start    # install if missing, configure, start, wait until idle
#   export SLURM_CONF=/run/mmsim-slurm/slurm.conf   # start prints this line
#   tools/slurm/single-node.sh status   # sinfo and squeue of that cluster
#   tools/slurm/single-node.sh stop     # cancel its jobs, stop its daemons, remove its directory
#
# start installs Debian's slurm-wlm and munge with apt-get when they are missing.
# Everything else lives in one directory: slurm.conf, a munge key and socket of
# its own, Slurm's state, spool and logs. Nothing under /etc is written and the
# system's munge socket is not used, so a machine's own Slurm or munge (if any)
# is left alone. The daemons are started by hand as root, not by systemd: CI
# may run without an init system. Written for Debian 12 (Slurm 22.05).
#
# Environment:
#   MMSIM_SLURM_DIR   the directory (default /run/mmsim-slurm)
#   MMSIM_SLURM_PORT  slurmctld's TCP port; slurmd listens on the next one
#                     (default 6817, Slurm's own; change it if a real Slurm runs here)
set -euo pipefail

DIR=${MMSIM_SLURM_DIR:-/run/mmsim-slurm}
PORT=${MMSIM_SLURM_PORT:-6817}
CONF=$DIR/slurm.conf
SOCKET=$DIR/munge/munge.socket
# slurmd knows its node by the short host name; slurmctld decides that it is the
# controller by comparing SlurmctldHost with the same name.
HOST=$(hostname -s)
# Daemons talk over loopback by address, so the host name need not resolve.
ADDR=127.0.0.1
export SLURM_CONF=$CONF

log() { printf 'single-node: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
}

need_root() {
  [[ $(id -u) -eq 0 ]] || die "run as root (it installs packages and starts daemons as root)"
}

# True if pid file $1 names a live process called $2 (a stale file's pid may
# have been reused). A daemon that exited may stay a zombie for a while (PID 1
# need not be an init that reaps at once): that is not alive either.
alive() {
  local pid stat comm
  pid=$(cat "$1" 2>/dev/null) && [[ -n $pid ]] || return 1
  read -r stat comm < <(ps -o stat=,comm= -p "$pid") || return 1
  [[ $stat != Z* && $comm == "$2" ]]
}

# Waits up to $3 seconds for the process $2 in pid file $1 to exit.
wait_gone() {
  local pidfile=$1 i
  for ((i = 0; i < $3 * 10; i++)); do
    alive "$pidfile" "$2" || return 0
    sleep 0.1
  done
  return 1
}

install_packages() {
  local cmd missing=0
  for cmd in slurmctld slurmd sbatch sinfo munged mungekey; do
    command -v "$cmd" >/dev/null || missing=1
  done
  ((missing)) || return 0
  log "installing slurm-wlm and munge with apt-get"
  # Without recommends: no mail server, no docs. The packages' own services
  # are not used (and are not started where policy-rc.d or no init forbids it).
  export DEBIAN_FRONTEND=noninteractive
  local out policy=/usr/sbin/policy-rc.d ours=0
  out=$(mktemp)
  # Keep the packages' own daemons from starting at install (they would want
  # /etc/slurm/slurm.conf), whether or not this machine runs an init system:
  # a policy-rc.d of our own for the install's duration, if there is none.
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && ours=1
  fi
  local rc=0
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Use-Pty=0 slurm-wlm munge; } >"$out" 2>&1 || rc=$?
  ((ours)) && rm -f "$policy"
  if ((rc)); then
    cat "$out" >&2
    rm -f "$out"
    die "apt-get could not install slurm-wlm and munge"
  fi
  rm -f "$out"
}

make_dirs() {
  # munged refuses a key, socket or seed whose directory (or any parent) is
  # writable by others without the sticky bit, so the tree is 0755 root.
  mkdir -p "$DIR"/{munge,log,run,state,spool}
  chmod 0755 "$DIR" "$DIR/munge"
  chmod 0700 "$DIR/state" "$DIR/spool"
}

start_munge() {
  [[ -s $DIR/munge/munge.key ]] ||
    mungekey --create --keyfile="$DIR/munge/munge.key" --bits=1024
  chmod 0400 "$DIR/munge/munge.key"
  munged --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
    --log-file="$DIR/log/munged.log" --pid-file="$DIR/run/munged.pid" \
    --seed-file="$DIR/munge/munged.seed" --origin="$ADDR" ||
    die "munged did not start: $(tail -n 3 "$DIR/log/munged.log" 2>/dev/null)"
  munge -n -S "$SOCKET" | unmunge -S "$SOCKET" >/dev/null ||
    die "munge does not decode its own credential"
}

# The node's hardware line as slurmd itself detects it (CPUs, sockets, cores,
# RealMemory), so that slurmd never finds less than slurm.conf promises.
node_line() {
  local line
  line=$(slurmd -C | head -n 1)
  [[ $line == NodeName=* ]] || die "slurmd -C printed '$line'"
  printf '%s NodeAddr=%s State=UNKNOWN\n' "$line" "$ADDR"
}

write_conf() {
  cat >"$CONF" <<EOF
# Written by tools/slurm/single-node.sh: a one-node cluster on $HOST for tests.
ClusterName=mmsim-local
SlurmctldHost=$HOST($ADDR)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
# Both daemons run as root, started by hand; jobs run as their submitter.
SlurmUser=root
SlurmdUser=root
# Our own munge daemon, not the system's /run/munge socket.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No cgroups: the default proctrack/cgroup needs a cgroup hierarchy that
# slurmd may create and a cgroup.conf; VMs and containers often have neither.
# linuxproc finds a job's processes through their parent pids instead.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
# Several array tasks share the node, one CPU each by default (select/linear
# would give each task the whole node and run the shards one after another).
# Memory is not a consumable resource, so tasks need not ask for it.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Take slurm.conf's node description as the truth: do not drain the node if
# it later detects a few MiB less memory (VM balloons, kernel reservations).
SlurmdParameters=config_overrides
# A node that was down (e.g. slurmd restarted) comes back by itself.
ReturnToService=2
# Debian's default mail program is not installed without recommends.
MailProg=/bin/true
$(node_line)
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_slurm() {
  # -c: start from empty state even if an old state directory was left.
  slurmctld -c || die "slurmctld did not start; see $DIR/log/slurmctld.log"
  slurmd -N "$HOST" || die "slurmd did not start; see $DIR/log/slurmd.log"
}

# Waits until sinfo reports our node idle (slurmd registered with slurmctld).
wait_idle() {
  local i state=
  for ((i = 0; i < 600; i++)); do
    state=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)
    [[ $state == idle ]] && return 0
    sleep 0.1
  done
  log "node $HOST is '${state:-unreachable}' after 60 s"
  sinfo -N -l >&2 || true
  tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
  return 1
}

start() {
  need_root
  alive "$DIR/run/slurmctld.pid" slurmctld && die "already running (SLURM_CONF=$CONF); stop it first"
  local t0=$SECONDS
  install_packages
  make_dirs
  start_munge
  write_conf
  start_slurm
  wait_idle || {
    stop
    die "the node did not become idle"
  }
  log "up in $((SECONDS - t0)) s: node $HOST idle"
  echo "export SLURM_CONF=$CONF"
}

# Cancels every job of this cluster and waits for the queue to drain, so no
# slurmstepd or job process outlives slurmd.
cancel_jobs() {
  local jobs i
  jobs=$(squeue -h -o %A 2>/dev/null) || return 0
  [[ -n $jobs ]] || return 0
  # shellcheck disable=SC2086  # one job id per word
  scancel $jobs || true
  for ((i = 0; i < 300; i++)); do
    [[ -z $(squeue -h -o %A 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  log "jobs still queued after 30 s: stopping anyway"
}

# Sends SIGTERM to the daemon in pid file $2 and waits for it to exit.
stop_daemon() {
  local name=$1 pidfile=$2
  alive "$pidfile" "$name" || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  wait_gone "$pidfile" "$name" 30 || die "$name (pid $pid) did not exit"
}

stop() {
  need_root
  if [[ ! -f $CONF ]]; then
    log "no cluster in $DIR: nothing to stop"
    return 0
  fi
  alive "$DIR/run/slurmctld.pid" slurmctld && cancel_jobs
  stop_daemon slurmd "$DIR/run/slurmd.pid"
  stop_daemon slurmctld "$DIR/run/slurmctld.pid"
  stop_daemon munged "$DIR/run/munged.pid"
  rm -rf "$DIR"
  log "stopped; removed $DIR"
}

status() {
  [[ -f $CONF ]] || die "no cluster in $DIR"
  echo "export SLURM_CONF=$CONF"
  sinfo -N -l
  squeue
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*) usage ;;
esac

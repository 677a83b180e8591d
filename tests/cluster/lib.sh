# Shared by the `cluster` tests (sourced): paths from CTest's environment, a scratch directory
# removed at exit, the small training config, Slurm job helpers and the checkpoint judge.
# Every wait is bounded; every failure names what was expected and what was found.
set -euo pipefail

: "${GANTRY_GAN_TRAIN:?set by CTest (tests/CMakeLists.txt)}"
: "${GANTRY_COMPARE:?set by CTest}"
: "${GANTRY_SOURCE_DIR:?set by CTest}"
: "${GANTRY_MPIEXEC:=mpirun}"
export OMP_WAIT_POLICY=passive
cluster_script=$GANTRY_SOURCE_DIR/scripts/start_test_cluster
images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
mpirun_flags=(--allow-run-as-root --oversubscribe)

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*" >&2; }
skip() {
  if [[ ${GANTRY_REQUIRE_CLUSTER:-0} == 1 ]]; then fail "$* (GANTRY_REQUIRE_CLUSTER=1: no skipping)"; fi
  echo "SKIP: $*" >&2
  exit 77
}

work=$(mktemp -d /tmp/gantry_cluster_XXXXXX)
cleanups=()
on_exit() {
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do eval "${cleanups[i]}" || true; done
  if [[ ${GANTRY_KEEP_CLUSTER_WORK:-0} == 1 ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap on_exit EXIT

[[ -f $images ]] || skip "dataset-fashion-mnist is not installed ($images)"

# The cluster that the `cluster.start` fixture (or CI's stage) started; skips only where
# scripts/start_test_cluster found that Slurm cannot start here.
need_cluster() {
  eval "$("$cluster_script" env)"
  "$cluster_script" status && return 0
  local reason=${GANTRY_CLUSTER_DIR:-/tmp/gantry-test-cluster}.unavailable
  [[ -f $reason ]] && skip "Slurm cannot start here: $(cat "$reason")"
  fail "the test cluster is not up (expected scripts/start_test_cluster start to have run: ctest's cluster.start fixture does it)"
}

# write_config FILE MODEL_DIR STEPS [HOOKS]: a DCGAN on Fashion-MNIST's test split, small enough for
# 2 cores, big enough (~0.1 s a step on 2 cores) that a signal lands mid-run. No periodic checkpoints
# unless asked (--set hooks.save_checkpoints_steps=K), so a checkpoint found after a stop is
# the stop's own. HOOKS: more "hooks" members, as JSON text (sweep_base_config's metric).
write_config() {
  cat >"$1" <<EOF
{
  "model_dir": "$2",
  "data": {"type": "idx", "images": "$images", "transforms": {"pad": 2}, "shuffle_buffer": 1024},
  "generator": {"type": "dcgan", "ngf": 48, "noise_dim": 64},
  "discriminator": {"type": "dcgan", "ndf": 48},
  "train": {"steps": $3, "global_batch_size": 64, "seed": 5},
  "strategy": {"collective_timeout_seconds": 20},
  "hooks": {"log_every_steps": 1, "sample_every_steps": 0, "save_checkpoints_steps": 0, "progress": false${4:+, $4}}
}
EOF
}

# same_checkpoint A B: bit for bit (gantry_compare_checkpoints), or the test fails.
same_checkpoint() {
  [[ -f $1 ]] || fail "expected checkpoint $1, found none ($(ls "$(dirname "$1")" 2>/dev/null | tr '\n' ' '))"
  [[ -f $2 ]] || fail "expected checkpoint $2, found none ($(ls "$(dirname "$2")" 2>/dev/null | tr '\n' ' '))"
  "$GANTRY_COMPARE" "$1" "$2" || fail "checkpoints differ: $1 vs $2"
}

# wait_for_text FILE REGEX SECONDS: until FILE has a line matching REGEX.
wait_for_text() {
  local end=$((SECONDS + $3))
  while ((SECONDS < end)); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  # A crashed task's report first (Open MPI's "Signal: ..." lines and the top of its backtrace,
  # which name the cause and which the tail would cut off), then the tail.
  local crash
  crash=$(grep -A24 -m1 -E '\*\*\* Process received signal' "$1" 2>/dev/null || true)
  fail "expected /$2/ in $1 within $3 s;${crash:+ a task crashed:
$crash
...}
it ends with:
$(tail -12 "$1" 2>/dev/null)"
}

# The "stopped at step S of N" step in FILE (the last one), or empty.
stopped_step() { grep -Eo 'stopped at step [0-9]+ of' "$1" | tail -1 | grep -Eo '[0-9]+' || true; }

# job_field ID FIELD: e.g. JobState, ExitCode, Restarts (scontrol show job, one line).
job_field() { scontrol -o show job "$1" 2>/dev/null | grep -Eo "(^| )$2=[^ ]*" | head -1 | cut -d= -f2-; }

# wait_job_state ID REGEX SECONDS: until the job's state matches.
wait_job_state() {
  local end=$((SECONDS + $3)) state=
  while ((SECONDS < end)); do
    state=$(job_field "$1" JobState)
    [[ $state =~ ^($2)$ ]] && return 0
    sleep 0.2
  done
  fail "expected job $1 to reach state /$2/ within $3 s, found '$state'; $(scontrol -o show job "$1" 2>&1 | head -c 600)"
}

# submit ARGS...: sbatch --parsable, the job's id in $job_id; cancels the job at exit.
submit() {
  job_id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
  job_id=${job_id%%;*}
  cleanups+=("end_job $job_id")
}

# end_job ID: cancels the job and waits (up to 40 s) until nothing of it runs, so no step writes
# into the scratch directory after it is removed.
end_job() {
  scancel "$1" 2>/dev/null || true
  local end=$((SECONDS + 40))
  while ((SECONDS < end)) && [[ $(job_field "$1" JobState) =~ ^(RUNNING|COMPLETING|CONFIGURING|SUSPENDED)$ ]]; do sleep 0.2; done
}

# wait_for_count FILE REGEX N SECONDS: until FILE has N lines matching REGEX.
wait_for_count() {
  local end=$((SECONDS + $4)) n=0
  while ((SECONDS < end)); do
    n=$(grep -Ec -- "$2" "$1" 2>/dev/null || true)
    ((n >= $3)) && return 0
    sleep 0.1
  done
  fail "expected $3 lines /$2/ in $1 within $4 s, found $n; it ends with:
$(tail -20 "$1" 2>/dev/null)"
}

# The docs' sbatch script, extracted from docs/distributed.md as written there (the ```sh block
# that starts with #!/bin/bash), into FILE.
extract_docs_sbatch_script() {
  awk '/^```sh$/ { block = 1; first = 1; next }
       block && first { first = 0; keep = ($0 == "#!/bin/bash") }
       /^```$/ { if (keep) exit; block = 0; keep = 0; next }
       keep { print }' "$GANTRY_SOURCE_DIR/docs/distributed.md" >"$1"
  grep -q '^#SBATCH' "$1" && grep -q '^srun .*gan_train' "$1" ||
    fail "expected docs/distributed.md to hold an sbatch script (#!/bin/bash, #SBATCH lines, srun gan_train); extracted:
$(cat "$1")"
  chmod +x "$1"
}

# The pids of this machine's gan_train processes whose environment has NAME=VALUE.
pids_with_env() {
  local p
  for p in $(pgrep -x gan_train || true); do
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "$1=$2" && echo "$p"
  done
  return 0
}

export PATH=$(dirname "$GANTRY_GAN_TRAIN"):$PATH

# --- Hosts in network namespaces ---------------------------------------------------------------
# make_hosts [DELAY_MS [LOSS_PERCENT]]: two "hosts", namespaces gantry-h1 (10.77.0.1) and
# gantry-h2 (10.77.0.2), each with loopback and one link to the other; nothing else reaches them.
# Without DELAY_MS the link is a veth pair (veth-h1 / veth-h2). With DELAY_MS it is a TUN device
# in each (dly-h1 / dly-h2) joined by tests/cluster/delay_link, which holds every packet DELAY_MS
# ms in each direction (round trip + 2 DELAY_MS; this kernel has no netem) and, with
# LOSS_PERCENT, drops each IP packet with that probability, independently, both ways (seeded;
# TCP retransmits); its log is $work/delay_link.log. Removed at exit. Skips where namespaces
# cannot be made (not root).
cluster_tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
netns_agent=$cluster_tools/netns_agent
make_hosts() {
  local delay_ms=${1:-} loss_percent=${2:-0}
  [[ -z $delay_ms && $loss_percent != 0 ]] && fail "make_hosts: loss ($loss_percent %) needs a delay_link (give DELAY_MS, 0 for none)"
  [[ $(id -u) -eq 0 ]] || skip "network namespaces need root (running as uid $(id -u))"
  local n
  for n in 1 2; do ip netns del gantry-h$n 2>/dev/null || true; done
  # Open MPI's session directories are named after the hosts' hostnames (gantry-hN).
  cleanups+=("ip netns del gantry-h1 2>/dev/null; ip netns del gantry-h2 2>/dev/null; rm -rf /tmp/ompi.gantry-h1.$(id -u) /tmp/ompi.gantry-h2.$(id -u)")
  ip netns add gantry-h1 || skip "cannot create network namespaces (ip netns add failed)"
  ip netns add gantry-h2
  local dev=veth
  if [[ -z $delay_ms ]]; then
    ip -n gantry-h1 link add veth-h1 type veth peer name veth-h2 netns gantry-h2
  else
    dev=dly
    [[ -x /usr/bin/python3 ]] || skip "delay_link needs Debian's python3 (/usr/bin/python3)"
    [[ -c /dev/net/tun ]] || skip "delay_link needs TUN devices (/dev/net/tun)"
    /usr/bin/python3 "$cluster_tools/delay_link" --delay-ms "$delay_ms" --loss "$loss_percent" --max-seconds 900 \
      gantry-h1 dly-h1 gantry-h2 dly-h2 2>"$work/delay_link.log" &
    delay_link_pid=$!
    # Before the namespaces go (cleanups run last to first): its TUN devices go with it.
    cleanups+=("kill $delay_link_pid 2>/dev/null; wait $delay_link_pid 2>/dev/null")
    local end=$((SECONDS + 10))
    until ip -n gantry-h2 link show dly-h2 >/dev/null 2>&1; do
      kill -0 "$delay_link_pid" 2>/dev/null || fail "delay_link exited: $(cat "$work/delay_link.log")"
      ((SECONDS < end)) || fail "expected delay_link to create dly-h1/dly-h2 within 10 s; found none"
      sleep 0.05
    done
  fi
  for n in 1 2; do
    ip -n gantry-h$n link set lo up
    [[ $dev == dly ]] && ip -n gantry-h$n link set dly-h$n mtu 65000
    ip -n gantry-h$n addr add 10.77.0.$n/24 dev $dev-h$n
    ip -n gantry-h$n link set $dev-h$n up
  done
}

# on_host N COMMAND...: COMMAND on host N (its namespace, its own hostname gantry-hN).
on_host() {
  local n=$1
  shift
  ip netns exec gantry-h$n unshare --uts sh -c 'hostname "$0" && exec "$@"' gantry-h$n "$@"
}

# Open MPI between the hosts: launched from host 1, daemons started in host 2 by netns_agent,
# TCP only (no shared memory: they are different hosts), on the veth network only.
mpi_hosts_flags=(--allow-run-as-root --mca plm_rsh_agent "$netns_agent" --mca btl tcp,self
  --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24)

# train_on_hosts CONFIG LOGNAME: one worker per host (1 CPU replica, 1 thread), each with its
# own model_dir $work/hN/run and its own log $work/hN/LOGNAME (written on that host, so a
# worker's last words survive a cut link), Open MPI over TCP between the namespaces.
# GANTRY_GRADIENT_BUCKET_MB, when set, reaches both workers (mpirun -x).
train_on_hosts() {
  local config=$1 log=$2 n app=()
  for n in 1 2; do
    mkdir -p "$work/h$n"
    ((n > 1)) && app+=(:)
    app+=(-np 1 --host 10.77.0.$n sh -c 'log=$0; exec "$@" >"$log" 2>&1' "$work/h$n/$log" "$GANTRY_GAN_TRAIN"
      --config "$config" --model-dir "$work/h$n/run" --set strategy.type=multi_worker_mirrored --devices cpu:0
      --set train.threads=1)
  done
  local env_flags=()
  [[ -n ${GANTRY_GRADIENT_BUCKET_MB:-} ]] && env_flags=(-x GANTRY_GRADIENT_BUCKET_MB)
  on_host 1 timeout "${train_timeout:-120}" "$GANTRY_MPIEXEC" "${mpi_hosts_flags[@]}" "${env_flags[@]}" "${app[@]}"
}

# expect_equals_one_process CONFIG STEPS: the chief's checkpoint of step STEPS (after
# train_on_hosts) equals one process with 2 CPU replicas on 2 threads, bit for bit — the same
# total thread count as the two 1-thread workers (oneDNN's sums depend on the thread count).
expect_equals_one_process() {
  local config=$1 steps=$2
  "$GANTRY_GAN_TRAIN" --config "$config" --model-dir "$work/one" --devices cpu:0,cpu:1 --set train.threads=2 \
    >"$work/one.log" 2>&1 || fail "the one-process run failed: $(tail "$work/one.log")"
  same_checkpoint "$work/h1/run/checkpoints/ckpt-$steps.safetensors" "$work/one/checkpoints/ckpt-$steps.safetensors"
}

# expect_two_workers LOG: the chief's log says it trained as one of 2 workers.
expect_two_workers() {
  grep -q 'cpu:0 on each of 2 workers' "$1" || fail "expected 2 workers: $(grep devices: "$1")"
}

# sweep_base_config STEPS: the sweep tests' base config, $work/base.json (write_config's DCGAN training
# STEPS steps), whose FID's feature network is a classifier trained here for 3 steps (enough to
# separate images); the sweep measures it at its rungs.
sweep_base_config() {
  "$(dirname "$GANTRY_GAN_TRAIN")/gan_classifier" --config "$GANTRY_SOURCE_DIR/configs/fashion_mnist_classifier.json" \
    --set out_dir="$work/classifier" --set train.max_steps=3 >"$work/classifier.log" 2>&1 ||
    fail "gan_classifier failed: $(tail -5 "$work/classifier.log")"
  write_config "$work/base.json" runs/unused "$1" '"report": {"enabled": false}, "tensorboard": {"enabled": false},
    "metrics": [{"type": "fid", "network": {"file": "'"$work/classifier/classifier.json"'"}, "num_fake": 128,
                 "num_real": 128, "batch_size": 128, "every_steps": 100000}]'
}

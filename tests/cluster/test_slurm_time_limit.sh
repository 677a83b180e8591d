# A time limit on the test cluster: docs/distributed.md's sbatch script (extracted as written)
# submitted with --time=1 (one minute) and --signal=USR1@50, training "forever". Slurm sends
# SIGUSR1 to every task before the limit (its timer runs every few seconds, so up to 50 s
# early); both tasks stop after the same step, the chief checkpoints it, both exit 75 well
# before the limit (no TIMEOUT, no SIGKILL), and the script requeues the job as the docs say.
source "$(dirname "$0")/lib.sh"
need_cluster
mkdir -p "$work/job"
extract_docs_sbatch_script "$work/job/job.sh"
write_config "$work/job/run.json" "$work/job/run" 100000
out=$work/job/out.log
submit --time=1 --signal=USR1@50 --nodes=1 --ntasks-per-node=2 --chdir="$work/job" --output="$out" "$work/job/job.sh"
id=$job_id
wait_job_state "$id" RUNNING 60
start=$SECONDS
wait_for_text "$out" '^stopped at step [0-9]+ of 100000 \(SIGUSR1\)' 70
took=$((SECONDS - start))
((took < 60)) || fail "expected the stop before the 60 s limit, found it after $took s"
step=$(stopped_step "$out")
wait_for_text "$out" 'tasks 0-1: Exited with exit code 75' 30
"$GANTRY_COMPARE" --check "$work/job/run/checkpoints/ckpt-$step.safetensors" || fail "expected a valid checkpoint of step $step"
[[ $(cat "$work/job/run/checkpoints/latest") == *"ckpt-$step.safetensors"* ]] || fail "expected latest to name ckpt-$step"
(($(grep -c 'stop requested' "$out") == 2)) || fail "expected both tasks to get the signal ('stop requested' twice), found $(grep -c 'stop requested' "$out")"
grep -q 'TIME LIMIT' "$out" && fail "expected no time-limit kill, found: $(grep 'TIME LIMIT' "$out")"
# The script's `scontrol requeue` on 75: pending again, to resume later.
wait_job_state "$id" PENDING 60
[[ $(job_field "$id" Restarts) == 1 ]] || fail "expected Restarts=1 after the script's requeue, found $(job_field "$id" Restarts)"
echo "PASS: SIGUSR1 ${took} s into a 60 s limit; stopped at step $step with its checkpoint, both tasks exit 75, requeued by the script"

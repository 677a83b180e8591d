# Preemption on the test cluster, both ways, in one job of docs/distributed.md's sbatch script
# (extracted as written): `scontrol requeue` mid-run, then a job in the higher-tier partition
# `urgent` that preempts it (PreemptMode=REQUEUE, GraceTime=30). Each time every task gets
# SIGTERM, both stop after the same step (the stop flag is all-reduced), the chief writes that
# step's checkpoint, both exit 75, Slurm requeues the job and the next start resumes. The final
# checkpoint equals an uninterrupted mpirun run of the same steps, bit for bit.
# Slurm holds a requeued job for 120 s (EligibleTime); the test lifts that with
# `scontrol update StartTime=now`, as an admin would, instead of waiting.
source "$(dirname "$0")/lib.sh"
need_cluster
steps=70
mkdir -p "$work/job" "$work/ref"
extract_docs_sbatch_script "$work/job/job.sh"
write_config "$work/job/run.json" "$work/job/run" $steps
write_config "$work/ref/run.json" "$work/ref/run" $steps
out=$work/job/out.log

submit --nodes=1 --ntasks-per-node=2 --chdir="$work/job" --output="$out" "$work/job/job.sh"
id=$job_id

# stop_and_resume WHAT ACTION: waits for 3 more logged steps, runs ACTION, and checks the stop.
stops=0
stop_and_resume() {
  local what=$1 action=$2 before after step
  before=$(grep -c '^stopped at step' "$out" 2>/dev/null || true)
  wait_job_state "$id" RUNNING 60
  local from
  from=$(($(grep -Eo '^step [0-9]+ \|' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0) + 3))
  wait_for_text "$out" "^step $from \|" 60
  note "$what at step >= $from: $action"
  eval "$action"
  wait_for_count "$out" '^stopped at step' $((before + 1)) 60
  step=$(stopped_step "$out")
  # Both tasks exit 75: srun reports them in one line.
  wait_for_count "$out" 'tasks 0-1: Exited with exit code 75' $((before + 1)) 60
  "$GANTRY_COMPARE" --check "$work/job/run/checkpoints/ckpt-$step.safetensors" ||
    fail "$what: expected a valid checkpoint of step $step"
  # Requeued: pending again (Restarts counts it), then started early instead of after 120 s.
  wait_job_state "$id" 'PENDING|RUNNING' 90
  stops=$((stops + 1))
  [[ $(job_field "$id" Restarts) -ge $stops ]] ||
    fail "$what: expected Restarts >= $stops, found $(job_field "$id" Restarts)"
  scontrol update jobid="$id" StartTime=now 2>/dev/null || true
  wait_for_text "$out" "^resumed from .*ckpt-$step.safetensors at step $step" 90
  note "$what: stopped at step $step (SIGTERM, exit 75 on both tasks), requeued (Restarts=$(job_field "$id" Restarts)), resumed at step $step"
}

stop_and_resume "scontrol requeue" 'scontrol requeue "$id"'
grep -q "JOB $id ON .* DUE TO JOB REQUEUE" "$out" || fail "expected Slurm's 'DUE TO JOB REQUEUE' in $out"
# The preemptor wants every CPU of the node, so the gantry job must make room.
stop_and_resume "preemption by partition urgent" \
  'submit --partition=urgent --ntasks=$(nproc) --output=/dev/null --wrap "sleep 2"; urgent=$job_id'
# Preemption with GraceTime cancels the step (SIGTERM, no reason given), and the urgent job
# runs while ours waits requeued: it starts before our job's last start.
grep -Eq "STEP $id\.[0-9]+ ON .* CANCELLED AT [^ ]+ \*\*\*$" "$out" || fail "expected Slurm to cancel the step for the preemptor"
grep -q '(SIGTERM)' "$out" || fail "expected the stops to name SIGTERM"

wait_job_state "$id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL' 120
[[ $(job_field "$id" JobState) == COMPLETED ]] || fail "expected job $id COMPLETED, found $(job_field "$id" JobState): $(tail -20 "$out")"
grep -q "done at step $steps" "$out" || fail "expected 'done at step $steps' in $out"
[[ $(job_field "$urgent" JobState) == COMPLETED ]] || fail "expected the preempting job $urgent COMPLETED, found $(job_field "$urgent" JobState)"
[[ $(job_field "$urgent" StartTime) < $(job_field "$id" StartTime) || $(job_field "$urgent" StartTime) == $(job_field "$id" StartTime) ]] ||
  fail "expected the preemptor to start ($(job_field "$urgent" StartTime)) before our job's last start ($(job_field "$id" StartTime))"

(cd "$work/ref" && "$GANTRY_MPIEXEC" "${mpirun_flags[@]}" -np 2 gan_train --config run.json \
  --set strategy.type=multi_worker_mirrored --devices all >"$work/ref/mpirun.log" 2>&1) ||
  fail "the uninterrupted mpirun run failed: $(tail -20 "$work/ref/mpirun.log")"
same_checkpoint "$work/job/run/checkpoints/ckpt-$steps.safetensors" "$work/ref/run/checkpoints/ckpt-$steps.safetensors"
echo "PASS: requeued twice (scontrol requeue, preemption), resumed each time; = uninterrupted mpirun run, bit for bit after $steps steps"

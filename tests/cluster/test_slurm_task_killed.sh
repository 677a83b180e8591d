# One task of a running job killed with SIGKILL (as the OOM killer or a dying node would): the
# other task must not hang. It ends within the collective timeout (20 s in lib.sh's config)
# plus a margin — under srun --mpi=pmix Slurm's PMIx plugin sees the task die and cancels the
# whole step at once (measured: about 1 s), saying so in the job's output — the job ends FAILED (not 75, so the docs script does not
# requeue it), the last periodic checkpoint is intact, and submitting the job again resumes
# from it; the final checkpoint equals an uninterrupted mpirun run, bit for bit.
source "$(dirname "$0")/lib.sh"
need_cluster
steps=60
mkdir -p "$work/job" "$work/ref"
extract_docs_sbatch_script "$work/job/job.sh"
write_config "$work/job/run.json" "$work/job/run" $steps
write_config "$work/ref/run.json" "$work/ref/run" $steps
sed -i 's/"save_checkpoints_steps": 0/"save_checkpoints_steps": 10/' "$work/job/run.json" "$work/ref/run.json"
out=$work/job/out.log
submit --nodes=1 --ntasks-per-node=2 --chdir="$work/job" --output="$out" "$work/job/job.sh"
id=$job_id
wait_for_text "$out" '^step 25 \|' 90
victim=$(pids_with_env SLURM_PROCID 1)
[[ $victim =~ ^[0-9]+$ ]] || fail "expected one gan_train with SLURM_PROCID=1, found '$victim'"
kill -9 "$victim"
killed=$SECONDS
note "SIGKILL to task 1 (pid $victim)"
wait_job_state "$id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL' 60
took=$((SECONDS - killed))
state=$(job_field "$id" JobState)
note "job $id: $state $(job_field "$id" ExitCode) after $took s; its output:
$(grep -v '^step' "$out" | tail -15)"
((took <= 20 + 15)) || fail "expected the job to end within the 20 s timeout + 15 s, took $took s"
[[ $state == FAILED ]] || fail "expected job $id FAILED, found $state"
[[ $(job_field "$id" Restarts) == 0 ]] || fail "expected no requeue after a crash, found Restarts=$(job_field "$id" Restarts)"
grep -Eq 'task 1: Killed' "$out" || fail "expected srun to report task 1 killed"
grep -Eq "STEP $id\.0 ON .* CANCELLED" "$out" || fail "expected Slurm to cancel step $id.0 and say so"
[[ -z $(pids_with_env SLURM_JOB_ID "$id") ]] || fail "expected no gan_train of job $id left, found $(pids_with_env SLURM_JOB_ID "$id")"
latest=$(cat "$work/job/run/checkpoints/latest")
"$GANTRY_COMPARE" --check "$work/job/run/checkpoints/$(basename "$latest")" || fail "expected an intact latest checkpoint"

submit --nodes=1 --ntasks-per-node=2 --chdir="$work/job" --output="$work/job/again.log" "$work/job/job.sh"
wait_job_state "$job_id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL' 120
[[ $(job_field "$job_id" JobState) == COMPLETED ]] || fail "expected the resubmitted job COMPLETED: $(tail "$work/job/again.log")"
grep -E "^resumed from .*$(basename "$latest")" "$work/job/again.log" || fail "expected a resume from $latest"
(cd "$work/ref" && "$GANTRY_MPIEXEC" "${mpirun_flags[@]}" -np 2 gan_train --config run.json \
  --set strategy.type=multi_worker_mirrored --devices all >"$work/ref/mpirun.log" 2>&1) ||
  fail "the uninterrupted mpirun run failed: $(tail -20 "$work/ref/mpirun.log")"
same_checkpoint "$work/job/run/checkpoints/ckpt-$steps.safetensors" "$work/ref/run/checkpoints/ckpt-$steps.safetensors"
echo "PASS: task 1 SIGKILLed; job FAILED after $took s; resubmitted, resumed from $(basename "$latest"), = uninterrupted run bit for bit"

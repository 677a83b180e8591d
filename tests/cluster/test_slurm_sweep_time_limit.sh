# A sweep's worker at its time limit (docs/sweeps.md): one trial of 1000 steps (a gan_train run
# between each two of the sweep's evaluation points) in an array job of one worker submitted with
# --time=1 --signal=USR1@20. The signal goes to job steps, so the worker runs as a step of its
# task: it gets SIGUSR1 some 25-40 s into the minute (after startup, long before the trial would
# end), its gan_train saves the step reached (or, between two runs, the last run's end stands) and
# the worker exits 75 with the trial left to resume. What follows is not checked here: the
# script's own `scontrol requeue` was once seen not to take on this cluster (the task then ends
# FAILED and the driver's next array resumes the trial; docs/sweeps.md); that it requeues its own
# task alone is test_slurm_sweep_worker_requeue.sh's, and the requeue-and-resume path itself
# test_slurm_sweep.sh's.
source "$(dirname "$0")/lib.sh"
need_cluster
[[ -n ${GANTRY_GAN_SWEEP:-} ]] || skip "the Python package (gan_sweep) is not built (GANTRY_PYTHON=OFF or no pybind11)"

sweep_base_config 1000
echo '{"optimizers.generator.lr": {"grid": [2e-4]}}' >"$work/space.json"
sweep=$work/sweep
"$GANTRY_GAN_SWEEP" --dir "$sweep" --config "$work/base.json" --space "$work/space.json" --trials 1 --kimg 64 \
  --sampler grid --pruner none --seed 5 --threads 1 --page-seconds 5 --slurm --workers 1 \
  --sbatch=--time=1 --sbatch=--signal=USR1@20 >"$work/driver.log" 2>&1 &
driver=$!
cleanups+=("kill -9 $driver 2>/dev/null")
wait_for_text "$work/driver.log" 'submitted array job [0-9]+' 90
job=$(grep -Eo 'submitted array job [0-9]+' "$work/driver.log" | grep -Eo '[0-9]+$')
# The driver first, then every array it submitted (it may have submitted another since).
cleanups+=("kill -9 $driver 2>/dev/null; for j in \$(cat '$sweep/slurm/jobs'); do end_job \$j; done")
trial_log=$sweep/trials/trial-0000/gan_train.log

note "array job $job submitted with --time=1 --signal=USR1@20; waiting for the signal"
# The signal may find the worker between two gan_train runs: then the step is the last run's end.
wait_for_text "$sweep/slurm/worker-0.log" 'worker 0: stopped \(SIGUSR1\)' 120
step=$(grep -Eo '^training stopped at step [0-9]+' "$trial_log" | tail -1 | grep -Eo '[0-9]+$' || true)
((step > 0 && step < 1000)) || fail "expected the stop before step 1000, found '$step'"
"$GANTRY_COMPARE" --check "$sweep/trials/trial-0000/checkpoints/ckpt-$step.safetensors" ||
  fail "expected a valid checkpoint of step $step"

note "stopped at step $step by SIGUSR1 well before the limit, its checkpoint valid"
grep -q 'worker 0: stopped (SIGUSR1); the trial resumes from its checkpoint' "$sweep/slurm/worker-0.log" ||
  fail "expected the worker to leave the trial to resume: $(cat "$sweep/slurm/worker-0.log")"
grep -q "TIME LIMIT" "$sweep/slurm/worker-0.log" && fail "expected the stop before the time limit: $(cat "$sweep/slurm/worker-0.log")"
echo "PASS: array job $job at --time=1 --signal=USR1@20: the worker got the signal, its trial stopped at step $step" \
  "with a valid checkpoint, left to resume"

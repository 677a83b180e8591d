# A sweep's worker at its time limit (docs/sweeps.md): one trial of 400 steps (a gan_train run
# between each two of the sweep's evaluation points) in an array job of one worker submitted with
# --time=1 --signal=USR1@30. Slurm signals job steps, not the batch shell, so the worker runs as a
# step of its task: it gets SIGUSR1 some 15-45 s into the minute, its gan_train saves the step
# reached, the worker exits 75 and the task's script requeues the task. Then the admin's part (the
# requeue hold lifted, a longer limit) and the same slot resumes the trial from its checkpoint to
# the end: one array job, one trial, started from scratch once.
source "$(dirname "$0")/lib.sh"
need_cluster
[[ -n ${GANTRY_GAN_SWEEP:-} ]] || skip "the Python package (gan_sweep) is not built (GANTRY_PYTHON=OFF or no pybind11)"

"$(dirname "$GANTRY_GAN_TRAIN")/gan_classifier" --config "$GANTRY_SOURCE_DIR/configs/fashion_mnist_classifier.json" \
  --set out_dir="$work/classifier" --set train.max_steps=3 >"$work/classifier.log" 2>&1 ||
  fail "gan_classifier failed: $(tail -5 "$work/classifier.log")"
cat >"$work/base.json" <<JSON
{
  "model_dir": "runs/unused",
  "data": {"type": "idx", "images": "$images", "transforms": {"pad": 2}, "shuffle_buffer": 1024},
  "generator": {"type": "dcgan", "ngf": 48, "noise_dim": 64},
  "discriminator": {"type": "dcgan", "ndf": 48},
  "train": {"steps": 400, "global_batch_size": 64, "seed": 5},
  "hooks": {"log_every_steps": 1, "sample_every_steps": 0, "save_checkpoints_steps": 0, "progress": false,
            "report": {"enabled": false}, "tensorboard": {"enabled": false},
            "metrics": [{"type": "fid", "network": {"file": "$work/classifier/classifier.json"}, "num_fake": 128,
                         "num_real": 128, "batch_size": 128, "every_steps": 100000}]}
}
JSON
echo '{"optimizers.generator.lr": {"grid": [2e-4]}}' >"$work/space.json"
sweep=$work/sweep
"$GANTRY_GAN_SWEEP" --dir "$sweep" --config "$work/base.json" --space "$work/space.json" --trials 1 --kimg 25.6 \
  --sampler grid --pruner none --seed 5 --threads 1 --page-seconds 5 --slurm --workers 1 \
  --sbatch=--time=1 --sbatch=--signal=USR1@30 >"$work/driver.log" 2>&1 &
driver=$!
cleanups+=("kill -9 $driver 2>/dev/null")
wait_for_text "$work/driver.log" 'submitted array job [0-9]+' 90
job=$(grep -Eo 'submitted array job [0-9]+' "$work/driver.log" | grep -Eo '[0-9]+$')
cleanups+=("end_job $job")
trial_log=$sweep/trials/trial-0000/gan_train.log

note "array job $job submitted with --time=1 --signal=USR1@30; waiting for the signal"
wait_for_text "$trial_log" '^stopped at step [0-9]+ of [0-9]+ \(SIGUSR1\)' 120
step=$(stopped_step "$trial_log")
((step > 0 && step < 400)) || fail "expected the stop before step 400, found $step"
"$GANTRY_COMPARE" --check "$sweep/trials/trial-0000/checkpoints/ckpt-$step.safetensors" ||
  fail "expected a valid checkpoint of step $step"

# The script requeued the task (exit 75): Slurm holds it 120 s; the admin lifts that and the limit.
for _ in $(seq 1 150); do
  [[ $(job_field "${job}_0" JobState) == PENDING ]] &&
    scontrol update jobid="${job}_0" StartTime=now TimeLimit=10 2>/dev/null && break
  sleep 0.2
done
[[ $(job_field "${job}_0" Restarts) -ge 1 ]] ||
  fail "expected task ${job}_0 to be requeued by its script (exit 75), found $(scontrol -o show job "${job}_0" 2>&1 | head -c 400)"
note "stopped at step $step by SIGUSR1; the task requeued itself"

wait "$driver" || fail "the driver failed: $(tail -20 "$work/driver.log")"
[[ $(wc -l <"$sweep/slurm/jobs") -eq 1 ]] || fail "expected one array job, found $(tr '\n' ' ' <"$sweep/slurm/jobs")"
grep -q "resumed from .*ckpt-$step.safetensors at step $step" "$trial_log" ||
  fail "expected the trial to resume from step $step: $(grep -E 'resumed|stopped' "$trial_log")"
grep -q '^trials: 1 complete' "$work/driver.log" || fail "expected the trial complete: $(tail -5 "$work/driver.log")"
[[ $(grep -c "gan_sweep worker 0: started" "$sweep/slurm/worker-0.log") -eq 2 ]] ||
  fail "expected worker 0 to start twice: $(cat "$sweep/slurm/worker-0.log")"
echo "PASS: array job $job at --time=1: the trial stopped by SIGUSR1 at step $step, the task requeued itself" \
  "and resumed the trial there to step 400"

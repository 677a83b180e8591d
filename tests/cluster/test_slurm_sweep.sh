# A hyperparameter sweep (docs/sweeps.md) as one Slurm array job of 2 workers on the test
# cluster: 6 trials measured at rungs of steps 3, 9 and 27, pruned by synchronous successive
# halving (the best 2 of 6 go on at step 3, the best of those 2 at step 9), so the order in which
# the two workers report cannot change a decision. While the last trial trains from step 9 to 27,
# `scontrol requeue` of its worker's task: its gan_train gets SIGTERM and saves the step reached,
# and the task is requeued and starts again as the same slot, resuming that trial from its
# checkpoint. The driver is killed (SIGKILL) and started again: it follows the array job it
# submitted instead of submitting another. In the end no trial is lost or started twice, each
# rung's value is written once, and every trial's values, rungs reached and state, and the best
# trial, equal those of an uninterrupted local sweep of the same seed (1 thread per trial on both
# sides, so the same bits).
# Slurm holds a requeued job for 120 s (EligibleTime); the test lifts that with `scontrol update
# StartTime=now`, as an admin would, instead of waiting.
source "$(dirname "$0")/lib.sh"
need_cluster
[[ -n ${GANTRY_GAN_SWEEP:-} ]] || skip "the Python package (gan_sweep) is not built (GANTRY_PYTHON=OFF or no pybind11)"
: "${GANTRY_PYTHON:?set by CTest with GANTRY_GAN_SWEEP}"

sweep_base_config 27
echo '{"optimizers.generator.lr": {"log_uniform": [1e-4, 1e-3]}, "optimizers.discriminator.beta1": {"grid": [0.0, 0.5]}}' \
  >"$work/space.json"
args=(--config "$work/base.json" --space "$work/space.json" --trials 6 --kimg 1.728 --min-kimg 0.192 --sampler random
  --pruner successive_halving --synchronous --seed 5 --threads 1 --page-seconds 5)
sweep=$work/slurm

"$GANTRY_GAN_SWEEP" --dir "$sweep" "${args[@]}" --slurm --workers 2 >"$work/driver1.log" 2>&1 &
driver=$!
cleanups+=("kill -9 $driver 2>/dev/null")
wait_for_text "$work/driver1.log" 'submitted array job [0-9]+' 90
job=$(grep -Eo 'submitted array job [0-9]+' "$work/driver1.log" | grep -Eo '[0-9]+$')
cleanups+=("end_job $job")
note "array job $job submitted"

# The trial that goes on to the last rung (step 27), at step 12: whichever worker resumed it.
trained() { grep -Eo 'trial [0-9]+: training to step 27' "$sweep"/slurm/worker-*.log 2>/dev/null | head -1 || true; }
end=$((SECONDS + 300))
until [[ -n $(trained) ]]; do ((SECONDS < end)) || fail "expected a trial to train to step 27 within 300 s"; sleep 0.2; done
slot=$(trained | grep -Eo 'worker-[0-9]+' | grep -Eo '[0-9]+')
trial=$(trained | grep -Eo 'trial [0-9]+' | grep -Eo '[0-9]+')
trial_dir=$sweep/trials/trial-$(printf %04d "$trial")
wait_for_text "$trial_dir/gan_train.log" '^step 12 \|' 120
note "scontrol requeue ${job}_$slot while it trains trial $trial"
scontrol requeue "${job}_$slot" || fail "scontrol requeue ${job}_$slot failed"
wait_for_text "$trial_dir/gan_train.log" '^stopped at step [0-9]+ of 27 \(SIGTERM\)' 60
step=$(stopped_step "$trial_dir/gan_train.log")
((step >= 12 && step < 27)) || fail "expected the stop between steps 12 and 27, found $step"
"$GANTRY_COMPARE" --check "$trial_dir/checkpoints/ckpt-$step.safetensors" || fail "expected a valid checkpoint of step $step"

note "the driver killed (SIGKILL) and started again"
kill -0 "$driver" 2>/dev/null || fail "expected the driver to be following the array job; it had exited: $(tail -30 "$work/driver1.log")"
kill -9 "$driver"
wait "$driver" 2>/dev/null || true
# The requeued task waits 120 s (EligibleTime) unless started now; it may take a moment to be pending.
for _ in $(seq 1 100); do
  [[ $(job_field "${job}_$slot" JobState) == PENDING ]] && scontrol update jobid="${job}_$slot" StartTime=now 2>/dev/null &&
    break
  sleep 0.2
done
timeout 250 "$GANTRY_GAN_SWEEP" --dir "$sweep" "${args[@]}" --slurm --workers 2 >"$work/driver2.log" 2>&1 ||
  fail "the restarted driver failed: $(tail -20 "$work/driver2.log")"
# It follows the array job it submitted — or, if the requeued task already ran to the end while the
# driver was down (Slurm may start it at once), finds the sweep finished; either way it submits none.
grep -Eq "following array job $job \(submitted before\)|^trials: 1 complete, 5 pruned" "$work/driver2.log" ||
  fail "expected the restarted driver to follow job $job or to find the sweep finished: $(head -5 "$work/driver2.log")"
[[ $(wc -l <"$sweep/slurm/jobs") -eq 1 ]] || fail "expected one array job, found $(tr '\n' ' ' <"$sweep/slurm/jobs");" \
  "the first driver: $(tail -8 "$work/driver1.log"); the second: $(head -8 "$work/driver2.log")"
grep -q "resumed from .*ckpt-$step.safetensors at step $step" "$trial_dir/gan_train.log" ||
  fail "expected trial $trial to resume from step $step: $(grep -E 'resumed|stopped' "$trial_dir/gan_train.log")"
[[ $(grep -c "gan_sweep worker $slot: started" "$sweep/slurm/worker-$slot.log") -ge 2 ]] ||
  fail "expected worker $slot to start twice (requeued): $(cat "$sweep/slurm/worker-$slot.log")"

note "the same sweep uninterrupted, locally (2 trials at a time, 1 thread each)"
"$GANTRY_GAN_SWEEP" --dir "$work/local" "${args[@]}" --jobs 2 >"$work/local.log" 2>&1 ||
  fail "the local sweep failed: $(tail -20 "$work/local.log")"

"$GANTRY_PYTHON" - "$sweep" "$work/local" <<'PY' || fail "the Slurm sweep differs from the uninterrupted one (above)"
import json, sys
from pathlib import Path
slurm, local = (json.loads((Path(d) / "summary.json").read_text()) for d in sys.argv[1:3])
key = lambda t: (t["number"], t["params"], t["state"], t["rung_values"], t["value"])
ok = True
states = sorted(t["state"] for t in slurm["trials"])
if states != ["complete"] + ["pruned"] * 5:
    print("expected 1 complete and 5 pruned trials, found", states)
    ok = False
for a, b in zip(slurm["trials"], local["trials"]):
    if key(a) != key(b):
        print("trial", a["number"], "slurm:", key(a), "local:", key(b))
        ok = False
if slurm["best"] != local["best"] or slurm["best_config"] != local["best_config"]:
    print("best: slurm", slurm["best"], "local", local["best"])
    ok = False
for t in slurm["trials"]:
    log = (Path(t["model_dir"]) / "gan_train.log").read_text()
    fresh = sum("resumed from" not in run for run in log.split("== gan_sweep: gan_train --steps")[1:])
    steps = [json.loads(l)["step"] for l in (Path(t["model_dir"]) / "metric-fid.jsonl").read_text().splitlines()]
    if fresh != 1 or steps != [3, 9, 27][:len(t["rung_values"])]:
        print("trial", t["number"], "started from scratch", fresh, "times; its fid at steps", steps)
        ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS: array job $job of 2 workers: trial $trial requeued at step $step and resumed there, the driver killed and" \
  "restarted; 6 trials, none lost or restarted, = the uninterrupted local sweep, best trial $(grep -Eo '"best": [0-9]+' "$sweep/summary.json")"

# A sweep worker's task that requeues itself (the worker script's `scontrol requeue` after exit 75,
# e.g. stopped by --signal before its time limit) requeues that task alone. One task of an array
# has the array's own id as its SLURM_JOB_ID, and requeueing that id requeues every task of the
# array: the script once did, and a running sibling worker was killed mid-trial. The worker script
# is gan_sweep's own (SlurmExecutor.script()) for 2 workers, its worker command replaced by a
# stand-in: the task holding the array's id exits 75 on its first run, the other runs 20 s and
# finishes. Expected: the sibling ran once, to its end; the first task was requeued.
source "$(dirname "$0")/lib.sh"
need_cluster
[[ -n ${GANTRY_PYTHONPATH:-} ]] || skip "the Python package (gan_sweep) is not built (GANTRY_PYTHON=OFF or no pybind11)"

mkdir -p "$work/sweep/slurm"
PYTHONPATH=$GANTRY_PYTHONPATH "$GANTRY_PYTHON" - "$work" >"$work/worker.sh" <<'PY' || fail "could not write the worker script"
import sys
from gantry.sweeps.slurm_executor import SlurmExecutor
work = sys.argv[1]
print(SlurmExecutor(work + "/sweep", workers=2, threads=1, gan_train="gan_train", sbatch_args=[], cwd=work,
                    say=print).script())
PY
cat >"$work/standin.sh" <<STANDIN
#!/bin/bash
runs=$work/runs-\$SLURM_ARRAY_TASK_ID
echo "run as job \$SLURM_JOB_ID" >>"\$runs"
if [[ \$SLURM_JOB_ID == "\$SLURM_ARRAY_JOB_ID" ]]; then
  sleep 3  # the sibling is running by now
  (( \$(grep -c '^run' "\$runs") == 1 )) && exit 75 || exit 0
fi
sleep 20
echo done >>"\$runs"
STANDIN
chmod +x "$work/standin.sh"
sed -Ei "s|^(srun --ntasks=1 --cpus-per-task=1) .*|\1 $work/standin.sh|" "$work/worker.sh"
grep -q "^srun .*standin.sh$" "$work/worker.sh" || fail "expected the worker script's srun line, found: $(cat "$work/worker.sh")"

submit "$work/worker.sh"
job=$job_id
note "array job $job of 2 tasks submitted"
wait_for_count "$work/runs-0" '^run' 1 60
wait_for_count "$work/runs-1" '^run' 1 60
holder=$(grep -l "^run as job $job\$" "$work"/runs-* | head -1 | grep -Eo '[01]$') ||
  fail "expected a task to run as job $job (the array's id), found: $(cat "$work"/runs-*)"
sibling=$((1 - holder))
sibling_log=$work/sweep/slurm/worker-$sibling.log
end=$((SECONDS + 60))  # until the sibling finishes or a requeue kills it
until grep -q '^done$' "$work/runs-$sibling" || grep -qs 'DUE TO JOB REQUEUE' "$sibling_log" || ((SECONDS > end)); do
  sleep 0.2
done
! grep -qs 'DUE TO JOB REQUEUE' "$sibling_log" || fail "expected task $sibling left alone, found: $(cat "$sibling_log")"
grep -q '^done$' "$work/runs-$sibling" || fail "expected task $sibling to finish within 60 s, found: $(cat "$work/runs-$sibling")"
(($(grep -c '^run' "$work/runs-$sibling") == 1)) || fail "expected task $sibling to run once, found: $(cat "$work/runs-$sibling")"
state=$(squeue -h -t all -j "${job}_$holder" -o %T)
[[ $state == PENDING || $(grep -c '^run' "$work/runs-$holder") -eq 2 ]] ||
  fail "expected task $holder requeued, found state '$state', $(cat "$work/runs-$holder")"
echo "PASS: array job $job: task $holder (the array's id) requeued itself after exit 75; task $sibling ran on to its end"

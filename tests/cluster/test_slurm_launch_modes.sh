# The launch modes on the test cluster, 2 tasks x 2 CPU replicas each, 6 steps:
#  - srun direct launch with --mpi=pmix: the PMI that Debian 12's Slurm (mpi/pmix_v4) and
#    Open MPI 4.1 (pmix ext3x over libpmix2 4.2) share;
#  - mpirun inside an allocation (sbatch --ntasks=2 --wrap "mpirun ..." without -np): Open MPI
#    reads the allocation (ras slurm) and starts one process per task of it (on one node it
#    needs no daemon; on several it would start them with srun, plm slurm);
# both train the same bits. And srun --mpi=pmi2 is refused by Debian's Open MPI, which has no
# PMI-2 component ("OMPI was not built with SLURM's PMI support"): PMIx is the one to use.
source "$(dirname "$0")/lib.sh"
need_cluster
steps=6
for mode in srun mpirun pmi2; do
  mkdir -p "$work/$mode"
  write_config "$work/$mode/run.json" "$work/$mode/run" $steps
done
train=(gan_train --config run.json --set strategy.type=multi_worker_mirrored --devices all)

(cd "$work/srun" && timeout 120 srun --ntasks=2 --mpi=pmix "${train[@]}" >srun.log 2>&1) ||
  fail "srun --mpi=pmix failed: $(tail -20 "$work/srun/srun.log")"
grep -q 'on each of 2 workers' "$work/srun/srun.log" || fail "expected 2 workers under srun: $(grep devices: "$work/srun/srun.log")"

submit --ntasks=2 --chdir="$work/mpirun" --output="$work/mpirun/job.log" \
  --wrap "$GANTRY_MPIEXEC ${mpirun_flags[*]} ${train[*]}"
wait_job_state "$job_id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL' 120
[[ $(job_field "$job_id" JobState) == COMPLETED ]] ||
  fail "expected mpirun inside the allocation to complete, found $(job_field "$job_id" JobState): $(tail -20 "$work/mpirun/job.log")"
grep -q 'on each of 2 workers' "$work/mpirun/job.log" || fail "expected 2 workers under mpirun in the allocation"
same_checkpoint "$work/srun/run/checkpoints/ckpt-$steps.safetensors" "$work/mpirun/run/checkpoints/ckpt-$steps.safetensors"

rc=0
(cd "$work/pmi2" && timeout 60 srun --ntasks=2 --mpi=pmi2 "${train[@]}" >pmi2.log 2>&1) || rc=$?
((rc != 0)) && grep -q "OMPI was not built with SLURM's PMI support" "$work/pmi2/pmi2.log" ||
  fail "expected srun --mpi=pmi2 to be refused by Open MPI (no PMI-2 support), found exit $rc: $(tail -5 "$work/pmi2/pmi2.log")"
echo "PASS: srun --mpi=pmix = mpirun inside an allocation, bit for bit after $steps steps; --mpi=pmi2 refused as expected"

# The link between the two namespace hosts cut mid-run (`ip link set veth-h2 down` in h2):
# no RST, no FIN, the packets just stop. Each worker fails in its next collective after the
# collective timeout (20 s) with the timeout error (logged on its own host), which names the
# peer it waited for by rank, host name and address (Note [arrival notices]), and neither
# hangs; the checkpoints written before the cut stay valid (none half-written). mpirun cannot
# reach host 2's daemon to tear it down, so it waits forever (Open MPI's behaviour): the test
# ends it and the stranded daemon. With the link back, the same command resumes from the chief's
# last checkpoint and the final checkpoint equals one process with 2 replicas, bit for bit.
source "$(dirname "$0")/lib.sh"
make_hosts
steps=60
write_config "$work/run.json" "$work/unused" $steps
sed -i 's/"save_checkpoints_steps": 0/"save_checkpoints_steps": 10/' "$work/run.json"
train_timeout=90 train_on_hosts "$work/run.json" cut.log >"$work/mpirun.log" 2>&1 &
launcher=$!
cleanups+=("kill $launcher 2>/dev/null; for p in \$(ip netns pids gantry-h2 2>/dev/null) \$(ip netns pids gantry-h1 2>/dev/null); do kill -9 \$p; done")
wait_for_text "$work/h1/cut.log" '^step 25 \|' 90
ip -n gantry-h2 link set veth-h2 down
cut=$SECONDS
note "link cut after step 25"
# Both workers gone within the timeout + 15 s.
workers() { for p in $(ip netns pids gantry-h1) $(ip netns pids gantry-h2); do
  [[ $(cat /proc/$p/comm 2>/dev/null) == gan_train ]] && echo "$p"; done; }
while ((SECONDS - cut < 35)) && [[ -n $(workers) ]]; do sleep 0.2; done
took=$((SECONDS - cut))
[[ -z $(workers) ]] || fail "expected both workers to exit within 35 s of the cut, still running: $(workers)"
for n in 1 2; do
  # Worker n (rank n - 1) on host n waited for the other: rank 2 - n on host 3 - n.
  peer="rank $((2 - n)) \(host gantry-h$((3 - n)), 10\.77\.0\.$((3 - n))\)"
  grep -Eq "rank $((n - 1)) waited longer than the timeout of 20000 ms for (the data of )?$peer" "$work/h$n/cut.log" ||
    fail "expected worker $n's log (host $n) to hold the timeout error naming the peer /$peer/, found: $(grep -v '^step' "$work/h$n/cut.log" | tail -5)"
  note "worker $n: $(grep -m1 'error' "$work/h$n/cut.log")"
done
# The launcher is stuck on the dead link: end it and what it left in the namespaces.
kill "$launcher" 2>/dev/null || true
for p in $(ip netns pids gantry-h1) $(ip netns pids gantry-h2); do kill -9 "$p" 2>/dev/null || true; done
wait "$launcher" 2>/dev/null || true
for f in "$work"/h1/run/checkpoints/ckpt-*.safetensors; do "$GANTRY_COMPARE" --check "$f" || fail "checkpoint $f damaged"; done
ls "$work/h1/run/checkpoints" | grep -v -E '^(ckpt-[0-9]+\.safetensors|latest)$' && fail "expected no partial files in checkpoints/"
latest=$(basename "$(cat "$work/h1/run/checkpoints/latest")")
[[ $latest == ckpt-20.safetensors ]] || fail "expected the last checkpoint before the cut (step 20), found $latest"

ip -n gantry-h2 link set veth-h2 up
train_on_hosts "$work/run.json" resume.log || fail "the resumed run failed: $(tail -n 20 "$work/h1/resume.log" "$work/h2/resume.log")"
grep -q "^resumed from .*$latest" "$work/h1/resume.log" || fail "expected a resume from $latest"
expect_equals_one_process "$work/run.json" $steps
echo "PASS: link cut; both workers failed with the timeout error naming the peer after $took s; checkpoints intact; resumed from $latest, = 1 process bit for bit"

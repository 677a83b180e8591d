# Two hosts that share no network: namespaces gantry-h1 / gantry-h2 (10.77.0.1 / .2 over a
# veth pair, own hostnames), one worker each with its own model_dir, Open MPI over TCP only
# (launched from h1, h2's daemon started in its namespace by netns_agent). 8 steps equal one
# process with 2 CPU replicas, bit for bit; the second host's model_dir is never written
# (the chief alone writes, Note [resume without a shared disk]).
source "$(dirname "$0")/lib.sh"
make_hosts
steps=8
write_config "$work/run.json" "$work/unused" $steps
train_on_hosts "$work/run.json" train.log || fail "the 2-host run failed: $(tail -n 20 "$work/h1/train.log" "$work/h2/train.log")"
expect_two_workers "$work/h1/train.log"
[[ ! -e $work/h2/run ]] || fail "expected host 2's model_dir unwritten, found $(ls "$work/h2/run")"
[[ ! -s $work/h2/train.log ]] || fail "expected host 2's worker silent, found $(head -5 "$work/h2/train.log")"
expect_equals_one_process "$work/run.json" $steps
echo "PASS: 2 hosts (netns, TCP) = 1 process with 2 replicas, bit for bit after $steps steps"

# The two namespace hosts joined by a link that loses packets (tests/cluster/delay_link
# --loss: this kernel has no netem): every IP packet, either way, is dropped with probability
# 2 % (seeded) and the rest are held 1 ms. First the loss is real: the forwarder reports the
# packets it threw away (both ways, near 2 % of those it read), and TCP in the hosts
# retransmitted (the namespaces' own /proc/net/snmp). Then 20 steps of 2 workers across the
# lossy link equal one process with 2 replicas bit for bit: TCP repairs every loss, so the
# gradients that arrive are the gradients sent, only later.
source "$(dirname "$0")/lib.sh"
delay_ms=1
loss_percent=2
make_hosts $delay_ms $loss_percent

# RetransSegs of host N's TCP (its namespace's counters).
retransmitted() {
  ip netns exec gantry-h$1 awk '$1 == "Tcp:" { if (!n) { for (i = 2; i <= NF; i++) if ($i == "RetransSegs") c = i; n = 1 } else print $c }' /proc/net/snmp
}
before=($(retransmitted 1) $(retransmitted 2))

steps=20
write_config "$work/run.json" "$work/unused" $steps
train_timeout=100 train_on_hosts "$work/run.json" train.log ||
  fail "the 2-host run over the lossy link failed: $(tail -n 20 "$work/h1/train.log" "$work/h2/train.log")"
expect_two_workers "$work/h1/train.log"
note "$(grep -m1 '^step 3 |' "$work/h1/train.log")"
after=($(retransmitted 1) $(retransmitted 2))
kill "$delay_link_pid" && wait "$delay_link_pid" 2>/dev/null || true
report=$(tail -1 "$work/delay_link.log")
note "$report"

# (a) The loss happened: the forwarder's count, and TCP's retransmissions on each host.
counts=($(grep -Eo 'lost at random [0-9]+ \+ [0-9]+ of [0-9]+ \+ [0-9]+ read' <<<"$report" | grep -Eo '[0-9]+' || true))
((${#counts[@]} == 4)) || fail "expected delay_link's report of the packets it lost, found: $(cat "$work/delay_link.log")"
lost=$((counts[0] + counts[1])) read=$((counts[2] + counts[3]))
((counts[0] > 0 && counts[1] > 0)) || fail "expected packets lost in both directions, found ${counts[0]} + ${counts[1]} of $read"
# One draw per packet from a generator seeded with 1: for every count from 300 packets on, the
# share of draws under 0.02 lies in [1.76 %, 3.0 %]; anything outside 1-4 % is not --loss 2.
((read >= 300)) || fail "expected at least 300 packets through the link, found $read"
awk -v l=$lost -v r=$read 'BEGIN { exit !(l >= 0.01 * r && l <= 0.04 * r) }' ||
  fail "expected about $loss_percent % of $read packets lost, found $lost"
retrans=$((after[0] - before[0] + after[1] - before[1]))
((after[0] > before[0] || after[1] > before[1])) ||
  fail "expected TCP retransmissions in the hosts after $lost lost packets, found RetransSegs ${before[*]} -> ${after[*]}"
rate=$(awk -v l=$lost -v r=$read 'BEGIN { printf "%.2f", 100 * l / r }')
note "lost $lost of $read packets ($rate %); TCP retransmitted $retrans segments (host 1: $((after[0] - before[0])), host 2: $((after[1] - before[1])))"

# (b) Nothing of it reached the workers or the model: no error or warning on either host (TCP
# hid the loss), and the weights equal one process's.
for n in 1 2; do
  ! grep -Ei 'error|warn' "$work/h$n/train.log" || fail "expected no error or warning from worker $n across the lossy link, found the lines above"
done
expect_equals_one_process "$work/run.json" $steps
echo "PASS: lossy link ($loss_percent % each way, $delay_ms ms): lost $lost of $read packets ($rate %), $retrans TCP retransmissions; 2 hosts = 1 process with 2 replicas, bit for bit after $steps steps"

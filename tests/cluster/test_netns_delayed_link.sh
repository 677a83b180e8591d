# The two namespace hosts joined by a link that delays every packet (tests/cluster/delay_link,
# a TUN device in each host and a user-space forwarder: this kernel has no netem). First the
# delay is real: TCP round trips between the hosts take at least twice the one-way delay. Then
# 6 steps over the delayed link, with gradient buckets small enough that each network's
# gradients cross the link in 5 or 6 all-reduces started during backward
# (GANTRY_GRADIENT_BUCKET_MB=0.25), equal one process with 2 replicas bit for bit, and the
# forwarder carried the gradients' bytes.
source "$(dirname "$0")/lib.sh"
delay_ms=10
make_hosts $delay_ms
on_host 2 /usr/bin/python3 "$cluster_tools/tcp_round_trip" serve 10.77.0.2 7777 30 &
server=$!
cleanups+=("kill $server 2>/dev/null")
rtt=$(on_host 1 /usr/bin/python3 "$cluster_tools/tcp_round_trip" measure 10.77.0.2 7777 20) ||
  fail "expected TCP round trips between the hosts, found none: $(cat "$work/delay_link.log")"
wait "$server" || true
min_rtt=$(awk '{ print $2 }' <<<"$rtt")
awk -v m="$min_rtt" -v d=$delay_ms 'BEGIN { exit !(m >= 2 * d) }' ||
  fail "expected every round trip to take at least 2 x $delay_ms ms, found the fastest at $min_rtt ms ($rtt)"
note "TCP round trip over the delayed link: $rtt ms (one-way delay $delay_ms ms)"

steps=6
write_config "$work/run.json" "$work/unused" $steps
GANTRY_GRADIENT_BUCKET_MB=0.25 train_on_hosts "$work/run.json" train.log ||
  fail "the 2-host run over the delayed link failed: $(tail -n 20 "$work/h1/train.log" "$work/h2/train.log")"
expect_two_workers "$work/h1/train.log"
# The per-step breakdown shows the delay: every step waits at least one one-way delay in all-reduce.
note "$(grep -m1 '^step 3 |' "$work/h1/train.log")"
expect_equals_one_process "$work/run.json" $steps
# The gradients went through the forwarder: each all-reduce of n floats sends n/2 in its
# reduce-scatter and n/2 in its all-gather from each worker, so every step sends at least
# 4 (G + D) bytes from host 1 to host 2.
kill "$delay_link_pid" && wait "$delay_link_pid" 2>/dev/null || true
counts=($(grep -Eo 'parameters: generator [0-9]+, discriminator [0-9]+' "$work/h1/train.log" | grep -Eo '[0-9]+' || true))
g=${counts[0]:-} d=${counts[1]:-}
[[ -n $d ]] || fail "expected the parameter counts in the chief's log, found: $(grep parameters "$work/h1/train.log")"
sent=$(grep -Eo 'forwarded [0-9]+ packets \([0-9]+ bytes\)' "$work/delay_link.log" | grep -Eo '[0-9]+ bytes' | grep -Eo '[0-9]+' || true)
((${sent:-0} >= steps * 4 * (g + d))) ||
  fail "expected at least $((steps * 4 * (g + d))) bytes of gradients through the delay forwarder, found ${sent:-no report}: $(cat "$work/delay_link.log")"
note "$(tail -1 "$work/delay_link.log")"
echo "PASS: delayed link ($delay_ms ms each way, round trip $min_rtt ms): 2 hosts = 1 process with 2 replicas, bit for bit after $steps steps"

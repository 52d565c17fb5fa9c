#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client killed with SIGKILL: its lease survives until the deadline and
# a new process reads the data back with the token; after the deadline the
# read fails with "lease expired". Its ephemeral lease is gone as soon as
# the connection is.
source "$(dirname "$0")/lib.sh"
rmp_init kill-client "$1"
daemon_start

ttl=15
len=65536
start=$(date +%s)
rmp_hold $len 7 $ttl
holder=$HOLDER
token=$(awk '$1 == "TOKEN" { print $2 }' "$RMP_TMP/hold")
etoken=$(awk '$1 == "EPHEMERAL" { print $2 }' "$RMP_TMP/hold")
[ -n "$token" ] && [ -n "$etoken" ] || rmp_fail "holder printed no tokens"
kill -KILL $holder
wait $holder 2>/dev/null

# The server sees the connection go (rdma_cm disconnect from the kernel).
for _ in $(seq 1 100); do
	daemon_log_has "\(rmp-test, .*disconnected" && break
	sleep 0.1
done
daemon_log_has "\(rmp-test, .*disconnected" ||
	rmp_fail "the daemon did not notice the killed client"

# The token's own host and port lead a new process to the lease.
"$RMPOOL" read "$token" --length $len >"$RMP_TMP/got" ||
	rmp_fail "rmpool read of the surviving lease failed"
"$RMP_TESTBIN" pattern 7 $len >"$RMP_TMP/want"
cmp "$RMP_TMP/got" "$RMP_TMP/want" || rmp_fail "data read back differs"

if "$RMPOOL" read "$etoken" --length 16 >/dev/null 2>"$RMP_TMP/err"; then
	rmp_fail "the ephemeral lease survived its connection"
fi
grep -qi "no such lease" "$RMP_TMP/err" ||
	rmp_fail "ephemeral read error: $(cat "$RMP_TMP/err")"

# Past the deadline (plus a tick and slack) the same read must fail.
sleep $((start + ttl + 2 - $(date +%s)))
if "$RMPOOL" read "$token" --length 16 >/dev/null 2>"$RMP_TMP/err"; then
	rmp_fail "the lease was readable after its deadline"
fi
cat "$RMP_TMP/err"
grep -qi "expired" "$RMP_TMP/err" ||
	rmp_fail "error after the deadline does not say expired"

daemon_stop
rmp_pass

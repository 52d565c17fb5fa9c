#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-fdstore.sh PORT -- [pool] fdstore = yes under a stand-in for
# systemd's file descriptor store (fake-fdstore.py: NOTIFY_SOCKET,
# FDSTORE=1, LISTEN_FDS on the next start). rmpoold stores its pool memfd;
# 20 leases are written; rmpoold is SIGKILLed and started again with the
# stored memfd: every lease attaches by token and reads back intact; the
# same after SIGTERM, and after a restart that finds the memfd under the
# name a daemon of one device used (rmpool-pool): it is taken, stored
# under the device's name, and the old name dropped, so that the restart
# after that finds it again (the stand-in, like systemd, does not store
# the same open file twice).
source "$(dirname "$0")/lib.sh"

rmp_init fdstore "$1"
N=20 LEN=65536 NAME=rmpool-pool-${RMP_TEST_DEV:-rxe0}
sed -i "s/^\[pool\]$/[pool]\nfdstore = yes/" "$RMP_CONF"
FAKE=$RMP_TMP/fake.log
python3 "$(dirname "$0")/fake-fdstore.py" "$FAKE" -- "$RMPOOLD" -c "$RMP_CONF" \
	>"$RMP_DLOG" 2>&1 &
RMP_DPID=$!

# started N -- wait until the daemon has said "listening on" N times.
started() {
	for _ in $(seq 1 300); do
		[ "$(grep -c 'listening on' "$RMP_DLOG")" -ge "$1" ] && return 0
		pid_running "$RMP_DPID" || rmp_fail "the stand-in for systemd exited"
		sleep 0.1
	done
	rmp_fail "rmpoold start $1 did not listen in 30 s"
}

started 1
grep -q "stored fd as $NAME" "$FAKE" ||
	rmp_fail "rmpoold did not store its pool memfd: $(cat "$FAKE")"
grep -q "pool memfd stored with the service manager" "$RMP_DLOG" ||
	fail_later "the log does not say the memfd was stored"
"$RMP_TESTBIN" fill "$RMP_TEST_ADDR" "$RMP_PORT" $N $LEN 600 600 5 \
	>"$RMP_TMP/tokens" || rmp_fail "fill failed"

# again SIGNAL COUNT WHAT NAME -- restart through the stand-in (the memfd
# handed back under NAME); check the leases.
again() {
	kill -"$1" "$RMP_DPID"
	started "$2"
	grep -q "restart after $3" "$FAKE" || rmp_fail "no restart after $3"
	grep -q "started pid .* with 1 stored fd(s) \['$4'\]" "$FAKE" ||
		rmp_fail "the memfd was not handed back: $(cat "$FAKE")"
	[ "$(grep -c "recovered $N lease(s), $((N * LEN)) bytes" "$RMP_DLOG")" -ge $(($2 - 1)) ] ||
		fail_later "after $3: the log does not say $N leases were recovered"
	out=$("$RMP_TESTBIN" verify "$RMP_TEST_ADDR" "$RMP_PORT" "$RMP_TMP/tokens" $LEN 5 -1) ||
		rmp_fail "after $3: $out"
	echo "after $3: $out"
	grep -q "^VERIFIED $N leases intact, 0 gone" <<<"$out" ||
		fail_later "after $3: not all $N leases intact"
}
again USR1 2 SIGKILL "$NAME"
again USR2 3 SIGTERM "$NAME"
again HUP 4 SIGTERM rmpool-pool
grep -q "removed fd rmpool-pool" "$FAKE" ||
	fail_later "the old name was not dropped from the store"
# The store must now hold it under the new name: the next restart finds it.
again USR2 5 SIGTERM "$NAME"
grep -E "memfd|recovered|state file" "$RMP_DLOG"
cat "$FAKE"
kill -TERM "$RMP_DPID"
wait "$RMP_DPID"
RMP_DPID=
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-ec.sh PORT -- erasure-coded leases over six daemons
# registered in etcd (n1..n6 on racks r1..r6, 8 MiB pools; lib-cluster.sh).
# A 4+2 lease of 16 MiB, spread by rack: its six members on six daemons,
# `rmpool info` says its code; written in uneven calls (1 B, 100 B, a
# chunk, a row, rows + tail, the rest) and read back identical, whole and
# in slices across chunk and row edges. Tenant b with a's token reads and
# writes nothing. A holder writes a second 4+2 lease in a loop
# (rmp-cluster seq: 4 KiB writes, each a part of a row, acknowledged)
# and a reader reads the first (rmp-eccheck reads: slices and whole rows
# from 1 MiB on, checked); a second writer of the holder's lease is
# refused, naming the holder (one writer at a time: a claim in etcd).
# A data member's daemon is SIGKILLed, then a parity member's; a write made with both dead (below 1 MiB)
# reads back, and so does the whole lease. Two spare nodes join;
# `rmpool repair` rebuilds both leases' two lost members on them while
# the holder writes and the reader reads: neither saw an error or a
# wrong byte, the reader decoded the chunks of the dead (ec_decoded),
# no acknowledged write was lost (seqcheck), and every member of both,
# each read by a handle of its own, holds what ISA-L encodes from the
# data, with one tag per row (rmp-eccheck code). A writer SIGKILLed half
# way through a 16 MiB write leaves rows torn, and its claim, which
# refuses the next writer; `rmpool scrub` mends the rows (every member as
# the code says, every row old or new bytes) and breaks the claim (a
# write goes again). Torn again and a data member's
# daemon killed: every row reads old or new bytes or fails with
# -EBADMSG, none as bytes nobody wrote. Three members dead: the lease is
# refused, saying why.
# (Python's Cluster.alloc(ec=) is in tests/python/test_cluster.py.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-ec "$1"
py_start
B_KEY=$RMP_TMP/b.key
rmp_keygen "$B_KEY"
CL_N=6
for i in 1 2 3 4 5 6; do
	CL_NODE[$i]=n$i CL_LABELS[$i]="rack=r$i" CL_POOL[$i]=8M
done
CL_CONF=$(printf '[tenant.b]\nkey_file = %s' "$B_KEY")
cluster_up
CLUSTER=etcd://${EURL#http://}
RMPC=$RMP_BUILD_ROOT/tests/rdma/rmp-cluster
ECCHECK=$RMP_BUILD_ROOT/tests/rdma/rmp-eccheck
as_b() { RMPOOL_TENANT=b RMPOOL_KEY_FILE=$B_KEY "$@"; }

LEN=$((16 << 20))
head -c $LEN /dev/urandom >"$RMP_TMP/a.bin"
tok=$("$RMPOOL" -C "$CLUSTER" alloc $LEN --ec 4+2 --spread rack --ttl 300 \
	2>"$RMP_TMP/alloc.err") ||
	{ cat "$RMP_TMP/alloc.err"; rmp_fail "alloc --ec 4+2"; }
"$RMPOOL" -C "$CLUSTER" info "$tok" >"$RMP_TMP/info.out" ||
	rmp_fail "info of the 4+2 lease"
cat "$RMP_TMP/info.out"
grep -q "^erasure code    4+2, chunk 4096 (6 of 6 members live)" \
	"$RMP_TMP/info.out" || fail_later "info does not say 4+2, 6 live"
# daemons_of -- the daemon of each member `rmpool info` on stdin lists, in
# member order (by its port)
daemons_of() {
	local port i
	awk '$1 == "member" {
		split($7, a, ":"); print a[2] }' | while read -r port; do
		for i in 1 2 3 4 5 6 7 8; do
			[ "${CL_PORT[$i]:-}" = "$port" ] && { echo $i; continue 2; }
		done
		echo "no daemon on port '$port'"
	done
}
member_daemons() { "$RMPOOL" -C "$CLUSTER" info "$1" | daemons_of; }
# member_daemon TOKEN I -- the daemon of member I
member_daemon() {
	local d
	d=$(member_daemons "$1" | sed -n "$(($2 + 1))p")
	case $d in [1-8]) echo "$d" ;;
	*) rmp_fail "member $2 of $1: ${d:-not listed}" ;; esac
}
expect_eq "daemons of the six members" \
	"$(member_daemons "$tok" | grep -x '[1-8]' | sort -u | grep -c .)" 6

# uneven calls: 1 B, 100 B, a chunk, a row, rows + tail, the rest
at=0
for n in 1 100 4096 16384 100000 $((LEN - 1 - 100 - 4096 - 16384 - 100000)); do
	tail -c +$((at + 1)) "$RMP_TMP/a.bin" | head -c $n |
		"$RMPOOL" -C "$CLUSTER" write "$tok" --offset $at ||
		rmp_fail "write of $n bytes at $at"
	at=$((at + n))
done
# check_all WHEN -- the lease read back as written, in uneven calls across
# chunk (4 KiB) and row (16 KiB) edges, then 1 MiB at a time
check_all() {
	"$ECCHECK" same "$CLUSTER" "$tok" "$RMP_TMP/a.bin" >"$RMP_TMP/same.out" \
		2>&1 || fail_later "read back $1: $(cat "$RMP_TMP/same.out")"
}
check_all "with every member live"

# tenant b with a's token: nothing
for cmd in read write; do
	if as_b "$RMPOOL" -C "$CLUSTER" $cmd "$tok" </dev/null >/dev/null \
		2>"$RMP_TMP/b.err"; then
		fail_later "tenant b could $cmd tenant a's erasure-coded lease"
	fi
done
grep -q "does not open with this token and tenant b's key" "$RMP_TMP/b.err" ||
	fail_later "tenant b's refusal does not say why: $(cat "$RMP_TMP/b.err")"

# a holder writing a second 4+2 lease across the kills
tok2=$("$RMPOOL" -C "$CLUSTER" alloc 2M --ec 4+2 --spread rack --ttl 300) ||
	rmp_fail "alloc of the second 4+2 lease"
mkfifo "$RMP_TMP/seq.in"
"$RMPC" seq "$CLUSTER" "$tok2" 5 <"$RMP_TMP/seq.in" >"$RMP_TMP/seq.out" \
	2>"$RMP_TMP/seq.err" &
SPID=$!
exec 7>"$RMP_TMP/seq.in"
# and a reader of the first lease, from 1 MiB on (the write with two
# members dead below goes under it)
mkfifo "$RMP_TMP/reads.in"
"$ECCHECK" reads "$CLUSTER" "$tok" "$RMP_TMP/a.bin" $((1 << 20)) \
	<"$RMP_TMP/reads.in" >"$RMP_TMP/reads.out" 2>&1 &
RPID=$!
exec 8>"$RMP_TMP/reads.in"
wait_acks 20
for _ in $(seq 1 300); do
	file_match "$RMP_TMP/reads.out" '^ready' && break
	kill -0 $RPID 2>/dev/null || break
	sleep 0.1
done
grep -q '^ready' "$RMP_TMP/reads.out" ||
	fail_later "the reader did not start: $(cat "$RMP_TMP/reads.out")"
# second_writer WHEN -- one writer at a time: the holder's claim refuses
# a second, by name
second_writer() {
	if head -c 100 /dev/urandom | "$RMPOOL" -C "$CLUSTER" write "$tok2" \
		2>"$RMP_TMP/busy.err"; then
		fail_later "$1: a second writer of the holder's lease was let in"
	fi
	cat "$RMP_TMP/busy.err"
	grep -q "another writer (.* pid $SPID holds its writer claim" \
		"$RMP_TMP/busy.err" ||
		fail_later "$1: the refusal does not name the holder"
}
second_writer "before the kills"

d0=$(member_daemon "$tok" 0) p1=$(member_daemon "$tok" 5)
echo "data member 0 on daemon $d0, parity member 5 on daemon $p1"
on_daemon "$d0" eval 'kill -KILL $RMP_DPID'
wait_acks 20
on_daemon "$p1" eval 'kill -KILL $RMP_DPID'
wait_acks 20

# written with two members dead (rows re-encoded, parts by delta), read back
head -c 300000 /dev/urandom >"$RMP_TMP/b.bin"
"$RMPOOL" -C "$CLUSTER" write "$tok" --offset 5000 <"$RMP_TMP/b.bin" ||
	fail_later "write with two members dead"
dd if="$RMP_TMP/b.bin" of="$RMP_TMP/a.bin" bs=64K seek=5000 oflag=seek_bytes \
	conv=notrunc status=none || rmp_fail "dd"
check_all "after a write with two members dead"
"$RMPOOL" -C "$CLUSTER" info "$tok" | grep "^erasure"

# two spare nodes; both leases repaired onto them, the second while its
# holder writes: each new member decoded from four live ones
for i in 7 8; do
	CL_NODE[$i]=n$i CL_LABELS[$i]="rack=r$i" CL_POOL[$i]=8M
	cluster_add $i
	on_daemon $i daemon_spawn
done
for i in 7 8; do
	on_daemon $i daemon_listening
	cl_wait_state $i registered 30 || rmp_fail "spare daemon $i did not register"
done
for t in "$tok" "$tok2"; do
	t0=${EPOCHREALTIME/./}
	"$RMPOOL" -C "$CLUSTER" repair "$t" >"$RMP_TMP/repair.out" 2>&1 ||
		fail_later "repair: $(cat "$RMP_TMP/repair.out")"
	echo "repair took $(((${EPOCHREALTIME/./} - t0) / 1000)) ms"
	"$RMPOOL" -C "$CLUSTER" info "$t" >"$RMP_TMP/info.out"
	grep "^erasure" "$RMP_TMP/info.out"
	expect_eq "members not on the dead daemons, and apart" \
		"$(daemons_of <"$RMP_TMP/info.out" | grep -x '[1-8]' | grep -vx "$d0" |
		grep -vx "$p1" | sort -u | grep -c .)" 6
done
wait_acks 20
# the repair's fence broke the holder's claim; it claimed again before
# it wrote on
second_writer "after the repairs"
echo stop >&7
exec 7>&-
echo stop >&8
exec 8>&-
wait "$RPID" || fail_later "the reader failed: $(cat "$RMP_TMP/reads.out")"
cat "$RMP_TMP/reads.out"
# it read member 0's chunks while its daemon was dead: decoded
[ "$(awk '$1 == "reads" { print $NF }' "$RMP_TMP/reads.out")" -gt 0 ] 2>/dev/null ||
	fail_later "the reader decoded no chunk (ec_decoded)"
wait "$SPID" || fail_later "the holder failed: $(cat "$RMP_TMP/seq.err")"
tail -n 1 "$RMP_TMP/seq.out"
grep '^error' "$RMP_TMP/seq.out" &&
	fail_later "the holder's writes failed: $(grep -c '^error' "$RMP_TMP/seq.out") $(tail -3 "$RMP_TMP/seq.err")"
"$RMPOOL" -C "$CLUSTER" info "$tok2" | grep "^erasure\|^member" 
"$RMPC" seqcheck "$CLUSTER" "$tok2" <"$RMP_TMP/seq.out" \
	>"$RMP_TMP/check.out" 2>&1 ||
	fail_later "acknowledged writes lost: $(tail -n 5 "$RMP_TMP/check.out")"
tail -n 1 "$RMP_TMP/check.out"
# every member, each read by a handle of its own, as the code says
for t in "$tok" "$tok2"; do
	"$ECCHECK" code "$CLUSTER" "$t" \
		>"$RMP_TMP/eccheck.out" 2>&1 ||
		fail_later "a member differs from the code: $(cat "$RMP_TMP/eccheck.out")"
	tr '\n' ' ' <"$RMP_TMP/eccheck.out"
	echo
done
check_all "after the repair"

# A writer SIGKILLed in the middle of a 16 MiB write (by the fault shim,
# before its 9th RDMA WRITE: the first step's rows marked pending on
# every member, some of its bytes written): rows it left torn; `rmpool scrub` with every member
# live mends them (the parity anew from the data): every member as the
# code says, every row old or new bytes
# claimed PID -- until the writer PID took the lease's writer claim (its
# first write: it attached every member before); 1 when it exited first
claimed() {
	for _ in $(seq 1 600); do
		etcd_keys /rmpool/writers/ && [ "$ETCD_KEYS" -gt 0 ] && return 0
		pid_running "$1" || return 1
		sleep 0.05
	done
	return 1
}
head -c $LEN /dev/urandom >"$RMP_TMP/c.bin"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/c.bin" &
w=$!
claimed $w || fail_later "the writer of c took no claim"
t0=${EPOCHREALTIME/./}
wait $w || fail_later "write c"
echo "a 16 MiB write took $(((${EPOCHREALTIME/./} - t0) / 1000)) ms from its claim"
# torn_write -- a.bin written over c.bin, the writer killed in the
# middle of it at the same WR on every run (a kill timed by the clock
# came too late on a fast run: nothing torn). The shim goes after the
# sanitizer's runtime, which must come first.
torn_write() {
	local pre=$RMP_FAILSHIM asan rc
	asan=$(ldd "$RMPOOL" 2>/dev/null | awk '$1 ~ /^libasan/ { print $3 }')
	[ -n "$asan" ] && pre="$asan $pre"
	LD_PRELOAD=$pre RMP_SHIM_KILL_AFTER_WRITES=8 \
		"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/a.bin" \
		2>"$RMP_TMP/torn.err"
	rc=$?
	[ "$rc" = 137 ] && grep -q "^failshim: killed" "$RMP_TMP/torn.err" ||
		fail_later "the torn writer did not die in its writes: exit $rc, $(tail -n 2 "$RMP_TMP/torn.err")"
}
torn_write
"$ECCHECK" code "$CLUSTER" "$tok" | tail -n 1 >"$RMP_TMP/left.out"
sed 's/^/left: /' "$RMP_TMP/left.out"
# killed within its writes: rows left torn, for the scrub to mend
grep -q " torn [1-9]" "$RMP_TMP/left.out" ||
	fail_later "the killed writer left no row torn: $(cat "$RMP_TMP/left.out")"
# the dead writer's claim refuses the next writer (for 30 s, or until a
# repair: the scrub's fence breaks it)
if head -c 1 "$RMP_TMP/c.bin" | "$RMPOOL" -C "$CLUSTER" write "$tok" \
	2>"$RMP_TMP/busy.err"; then
	fail_later "a write right after the writer died was not refused"
fi
grep -q "another writer" "$RMP_TMP/busy.err" ||
	fail_later "not refused for the dead writer: $(cat "$RMP_TMP/busy.err")"
"$RMPOOL" -C "$CLUSTER" scrub "$tok" >"$RMP_TMP/scrub.out" 2>&1 ||
	fail_later "scrub: $(cat "$RMP_TMP/scrub.out")"
"$ECCHECK" code "$CLUSTER" "$tok" >"$RMP_TMP/eccheck.out" 2>&1 ||
	fail_later "after the scrub: $(cat "$RMP_TMP/eccheck.out")"
tail -n 1 "$RMP_TMP/eccheck.out" | sed 's/^/after the scrub: /'
"$ECCHECK" rows "$CLUSTER" "$tok" "$RMP_TMP/c.bin" "$RMP_TMP/a.bin" \
	>"$RMP_TMP/rows.out" 2>&1 || fail_later "rows: $(cat "$RMP_TMP/rows.out")"
tail -n 1 "$RMP_TMP/rows.out"
grep -q " torn 0 wrong 0$" "$RMP_TMP/rows.out" ||
	fail_later "rows after the scrub: $(cat "$RMP_TMP/rows.out")"
# the scrub broke the dead writer's claim: a write goes (its byte 0 as it is)
"$RMPOOL" -C "$CLUSTER" read "$tok" --length 1 >"$RMP_TMP/b0" &&
	"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/b0" ||
	fail_later "no write after the scrub"
# torn again, then a data member's daemon killed: a row reads as old or
# new bytes or fails with -EBADMSG (no k members of one write), never as
# bytes nobody wrote
torn_write
on_daemon "$(member_daemon "$tok" 0)" eval 'kill -KILL $RMP_DPID'
"$ECCHECK" rows "$CLUSTER" "$tok" "$RMP_TMP/c.bin" "$RMP_TMP/a.bin" \
	>"$RMP_TMP/rows.out" 2>&1 ||
	fail_later "a row read as bytes nobody wrote: $(cat "$RMP_TMP/rows.out")"
tail -n 1 "$RMP_TMP/rows.out" | sed 's/^/data member 0 dead: /'

# three members dead: more than m lost, a clear error
mapfile -t daemons < <(member_daemons "$tok")
for m in 1 2; do
	on_daemon "${daemons[$m]}" eval 'kill -KILL $RMP_DPID'
done
if "$RMPOOL" -C "$CLUSTER" read "$tok" >/dev/null 2>"$RMP_TMP/read3.err"; then
	fail_later "a read with three of six members dead succeeded"
fi
cat "$RMP_TMP/read3.err"
grep -q "has 3 of its 6 members within reach now, and needs 4" \
	"$RMP_TMP/read3.err" ||
	fail_later "the read with three members dead does not say why"
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-renew.sh PORT -- `rmpool renew` from the shell keeps a lease
# alive while an application reads it, without disturbing the
# application (a renew by token changes nobody's key).
#
# A lease is allocated with ttl 8 s. rmp-test readloop attaches it and
# reads 64 bytes back to back for 18 s, failing on any error. Meanwhile
# `rmpool renew TOKEN --ttl 8` runs again and again (0.2 s apart, the
# first at once: under ASan in a loaded TCG guest one took 4.6 s of the
# ttl, process start and connect included), the token
# given in turn each of the four ways the CLI takes it (argument, "-" on
# stdin, --token-file, $RMPOOL_TOKEN; ways the loop did not reach run
# right after it). The reader must read for the whole 18 s: well over
# twice the ttl it attached with. After the last renew the lease expires
# within its ttl (+ slack), and then `rmpool renew` fails. No client
# output holds the tenant key.
source "$(dirname "$0")/lib.sh"
rmp_init tenant-renew "$1"
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms
TTL=8
READ_S=18
daemon_start

OUT=$RMP_TMP/out
mkdir -p "$OUT"
rmp_raw alloc 4096 $TTL --token >"$OUT/alloc.out" || rmp_fail "alloc failed"
token=$(sed -n 's/^TOKEN //p' "$OUT/alloc.out")
[ -n "$token" ] || rmp_fail "no token"
(umask 077 && printf '%s\n' "$token" >"$RMP_TMP/token")

"$RMP_TESTBIN" readloop "$RMP_TEST_ADDR" "$RMP_PORT" "$token" $READ_S \
	>"$OUT/readloop.out" 2>"$OUT/readloop.err" &
reader=$!
# The renewals start now, not once the reader has attached: the lease's
# ttl runs from the alloc, and under load an attach may take seconds.
t0=$(date +%s%N)

# renew_once: the next renewal, the token given the next of the four ways.
i=0
renew_once() {
	i=$((i + 1))
	t_start=$(date +%s%N)
	case $((i % 4)) in
	1) how=argument
	   rmpool renew "$token" --ttl $TTL ;;
	2) how=stdin
	   printf '%s\n' "$token" | rmpool renew - --ttl $TTL ;;
	3) how=token-file
	   rmpool renew --token-file "$RMP_TMP/token" --ttl $TTL ;;
	0) how=RMPOOL_TOKEN
	   RMPOOL_TOKEN=$token rmpool renew --ttl $TTL ;;
	esac >"$OUT/renew$i.out" 2>"$OUT/renew$i.err"
	rc=$?
	t_last=$(date +%s%N)
	echo "renew $i (token by $how) at $(((t_start - t0) / 1000000)) ms," \
		"took $(((t_last - t_start) / 1000000)) ms: exit $rc"
	cat "$OUT/renew$i.out" "$OUT/renew$i.err"
	[ "$rc" -eq 0 ] || rmp_fail "rmpool renew (token by $how) exited $rc"
}
while pid_running "$reader"; do
	renew_once
	sleep 0.2
done
rc=0
wait "$reader" || rc=$?
cat "$OUT/readloop.out"
sed 's/^/[readloop] /' "$OUT/readloop.err" >&2
if [ "$rc" -ne 0 ]; then
	# Diagnosis: does the server still hold the lease?
	if rmp_raw byid attach "$token" --read; then
		rmp_fail "the reader failed while the lease was renewed (exit" \
			"$rc), although the server still holds the lease: a new" \
			"connection attaches and reads it"
	fi
	rmp_fail "the reader failed while the lease was renewed (exit $rc)"
fi
attach_ttl=$(sed -n 's/^ATTACHED ttl_ms=//p' "$OUT/readloop.out")
read -r _ reads _ ms _ < <(grep '^reads ' "$OUT/readloop.out")
[ -n "$attach_ttl" ] && [ "$attach_ttl" -le $((TTL * 1000)) ] ||
	rmp_fail "the reader attached with ttl '$attach_ttl' ms, want <= $((TTL * 1000))"
[ "${reads:-0}" -gt 0 ] && [ "${ms:-0}" -ge $((READ_S * 1000)) ] ||
	rmp_fail "the reader made ${reads:-no} reads in ${ms:-?} ms"
[ "$ms" -gt $((attach_ttl + 2000)) ] ||
	rmp_fail "the reader's $ms ms do not prove renewals (ttl $attach_ttl ms)"
echo "ok: $reads reads in $ms ms on a lease attached with $attach_ttl ms to" \
	"live, $i renewals by rmpool"

# How many renewals fit in the read loop depends on the host's speed
# (each is a process start, a connection and AUTH: 2-3 s under ASan in
# the TCG guest); what proves they worked is the reader outliving its
# ttl, above. Each way of giving the token still runs once: the lease is
# alive (renewed less than a ttl ago), so the rest run now.
while [ "$i" -lt 4 ]; do
	renew_once
done

# No more renewals: the lease ends within its ttl (+ tick + slack).
now=$(date +%s%N)
wait_ms=$(((t_last - now) / 1000000 + TTL * 1000 + 1500))
[ "$wait_ms" -gt 0 ] && sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
check rmp_raw byid attach "$token" --expect EKEYEXPIRED
rc=0
rmpool renew "$token" --ttl $TTL >"$OUT/late.out" 2>"$OUT/late.err" || rc=$?
cat "$OUT/late.out" "$OUT/late.err"
[ "$rc" -eq 1 ] || rmp_fail "rmpool renew of an expired lease exited $rc, want 1"
daemon_log_has "audit: expire tenant=test client=- peer=- lease=" ||
	rmp_fail "no audit line for the expiry"

# Neither half of the tenant key's hex in any output (control: in the
# key file they are found).
hex=$(cat "$RMP_KEY")
pats=(-e "${hex:0:32}" -e "${hex:32:32}")
grep -qiF "${pats[@]}" "$RMP_KEY" || rmp_fail "the key patterns do not match the key"
leaks=$(grep -liF "${pats[@]}" "$OUT"/* "$RMP_DLOG")
[ -z "$leaks" ] || rmp_fail "tenant key text found in:" $leaks
daemon_stop
rmp_pass

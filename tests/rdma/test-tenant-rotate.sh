#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-rotate.sh PORT -- a rotated key cuts the data access of
# whoever proved the old one, after rotate_grace; applications that
# reconnect come back with the new key by themselves.
#
# Tenant "rot" (rotate_grace = 2s), its key file K. A lease of rot is
# read in a loop by rmp-test readloop with a copy of the old key (a key
# that leaked, say); rmp-test flap --reconnect is an application of rot
# reading its own auto-renew lease with K itself. Then K is rewritten
# with a new key and the daemon reloads, and the owner keeps renewing
# the lease with the new key (rmpool renew, every 0.5 s):
#   - the old-key reader's next read fails within grace + 1 s of the
#     reload (the sweep that closes it runs every second; 1 s more is
#     allowed for the reload and the reader's own detection), and not
#     before the grace;
#   - the application's loop fails too, and once told to go on, the same
#     handle reads its lease back intact: the library connected again
#     with K as it is now and attached the lease again;
#   - the old key is refused at connect, the new one served.
source "$(dirname "$0")/lib.sh"

rmp_init tenant-rotate "$1"
K=$RMP_TMP/rot.key OLD=$RMP_TMP/rot-old.key NEW=$RMP_TMP/rot-new.key
rmp_keygen "$K"
rmp_keygen "$NEW"
cp -p "$K" "$OLD"
grace_ms=2000
printf '[tenant.rot]\nkey_file = %s\nrotate_grace = 2s\n' "$K" >>"$RMP_CONF"

daemon_start
as_rot() { RMPOOL_TENANT=rot RMPOOL_KEY_FILE=$1 "${@:2}"; }

token=$(as_rot "$K" rmpool alloc 4096 --ttl 60) || rmp_fail "alloc as rot failed"
as_rot "$OLD" "$RMP_TESTBIN" readloop "$RMP_TEST_ADDR" "$RMP_PORT" \
	"$token" 120 >"$RMP_TMP/reader.out" 2>"$RMP_TMP/reader.err" &
reader=$!
go=$RMP_TMP/go
as_rot "$K" "$RMP_TESTBIN" flap "$RMP_TEST_ADDR" "$RMP_PORT" 2000 "$go" \
	--reconnect >"$RMP_TMP/app.out" 2>"$RMP_TMP/app.err" &
app=$!
for _ in $(seq 1 300); do
	file_match "$RMP_TMP/reader.out" ATTACHED && file_match "$RMP_TMP/app.out" READY &&
		break
	sleep 0.1
done
grep -q ATTACHED "$RMP_TMP/reader.out" || rmp_fail "the old-key reader did not attach"
grep -q READY "$RMP_TMP/app.out" || rmp_fail "the application did not start"
sleep 1
pid_running "$reader" || rmp_fail "the reader failed before the rotation: $(cat "$RMP_TMP/reader.err")"

# Rotate: the same file gets the new key; reload.
cp "$NEW" "$K"
kill -HUP "$RMP_DPID"
for _ in $(seq 1 100); do
	daemon_log_has "reload done" && break
	sleep 0.1
done
# the grace runs from the reload, which under emulation beside other
# tests may take a while itself: timed from when it is seen done
t0=$(date +%s%N)
daemon_log_has "tenant rot: key changed" || rmp_fail "the reload did not change rot's key"

# The owner renews with the new key (in the background, every 0.5 s)
# while the old-key reader reads; the reader's end is seen within 0.1 s.
(
	while :; do
		as_rot "$K" rmpool renew "$token" --ttl 60 >/dev/null ||
			echo "renewal failed" >>"$RMP_TMP/renew.err"
		echo >>"$RMP_TMP/renewals"
		sleep 0.5
	done
) &
renewer=$!
cut_ms= app_ms=
while :; do
	el=$((($(date +%s%N) - t0) / 1000000))
	if [ -z "$cut_ms" ] && ! pid_running "$reader"; then
		cut_ms=$el
	fi
	if [ -z "$app_ms" ] && grep -q "failed after" "$RMP_TMP/app.out"; then
		app_ms=$el
	fi
	[ -n "$cut_ms" ] && [ -n "$app_ms" ] && break
	[ "$el" -gt $((grace_ms + 10000)) ] && break
	sleep 0.1
done
# an rmpool under ASan beside another test may take seconds: the first
# renewal is waited for (30 s at most), not cut short by the kill
for _ in $(seq 1 300); do
	[ -s "$RMP_TMP/renewals" ] && break
	sleep 0.1
done
kill "$renewer"
wait "$renewer" 2>/dev/null
renews=$(wc -l <"$RMP_TMP/renewals" 2>/dev/null || echo 0)
echo "owner: $renews renewals with the new key"
[ -s "$RMP_TMP/renew.err" ] &&
	fail_later "the owner's renewal with the new key failed $(wc -l <"$RMP_TMP/renew.err") time(s)"
[ "$renews" -gt 0 ] || fail_later "the owner made no renewal"
echo "old-key reader: $(cat "$RMP_TMP/reader.err")"
if [ -z "$cut_ms" ]; then
	fail_later "the old-key reader still reads $((grace_ms + 10000)) ms after the reload"
else
	echo "old-key reader cut $cut_ms ms after the reload (rotate_grace $grace_ms ms)"
	# + 1 s: the sweep that closes it; + 1 s: the reader's own
	# detection, under emulation beside other tests.
	[ "$cut_ms" -le $((grace_ms + 1000 + 1000)) ] ||
		fail_later "the old-key reader was cut $cut_ms ms after the reload: more than grace + 1 s"
	[ "$cut_ms" -ge $((grace_ms - 500)) ] ||
		fail_later "the old-key reader was cut $cut_ms ms after the reload: before the grace"
fi
[ -n "$app_ms" ] || fail_later "the application's connection was not cut"

# The application goes on by itself with the new key.
touch "$go"
wait "$app" || fail_later "the application did not come back: $(cat "$RMP_TMP/app.err")"
grep -E "^op|^BACK" "$RMP_TMP/app.out"
grep -q "^BACK" "$RMP_TMP/app.out" || fail_later "the application did not read its lease back"
wait "$reader" 2>/dev/null

if as_rot "$OLD" rmp_raw stat >/dev/null 2>&1; then
	fail_later "a new connection with the old key is served"
fi
as_rot "$K" rmp_raw stat >/dev/null || fail_later "the new key is not served"
daemon_log_has "its tenant's key changed: every request refused; closed, its keys with it, in 2000 ms" ||
	fail_later "the log does not say the old-key connections were voided"
daemon_stop
rmp_done

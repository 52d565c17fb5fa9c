#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-share.sh PORT MODE -- one lease, many connections, each with
# a key of its own (lease_keys = MODE: window or region).
#
# rmp-test share (see rmp_test.c): an owner and four threads' clients
# attached by token do 4 x 10^4 FAA(+1): exactly 40000, every old value
# once; attaches report holders 2..5; a read-only attach (holders 6) reads,
# and the library refuses its write. While it pauses, rmp-raw rowrite
# attaches read-only too and posts an RDMA WRITE with its key: the NIC
# must refuse it (remote access error) and the word stays 40000. Then an
# exclusive attach makes every other holder's next access fail while the
# exclusive holder works, and after a FREE by token every holder's next
# access fails. The daemon log has the audit lines (attach, takeover,
# free) and no lease secret; no output holds the tenant key.
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
window | region) ;;
*) echo "usage: $0 PORT window|region" >&2; exit 2 ;;
esac
rmp_init "tenant-share-$mode" "$1"
rmp_conf lease lease_keys "$mode"
# The read-only WRITE and the revoked keys' accesses are access errors:
# no cool-down for this address.
rmp_conf server access_errors_per_minute 0
daemon_start
daemon_log_has "lease keys: $mode" ||
	rmp_fail "the daemon does not use lease_keys = $mode"

OUT=$RMP_TMP/out
mkdir -p "$OUT"
mkfifo "$RMP_TMP/share.in"
"$RMP_TESTBIN" share "$RMP_TEST_ADDR" "$RMP_PORT" --pause \
	<"$RMP_TMP/share.in" >"$OUT/share.out" 2>"$OUT/share.err" &
share=$!
exec {share_fd}>"$RMP_TMP/share.in"

token=
for _ in $(seq 1 1200); do
	token=$(sed -n 's/^PAUSE //p' "$OUT/share.out")
	[ -n "$token" ] && break
	pid_running "$share" || break
	sleep 0.1
done
if [ -z "$token" ]; then
	cat "$OUT/share.out"
	sed 's/^/[share] /' "$OUT/share.err" >&2
	rmp_fail "rmp-test share did not reach its pause"
fi
cat "$OUT/share.out"

# The NIC, not the library, refuses a read-only key's WRITE.
rc=0
rmp_raw rowrite "$token" >"$OUT/rowrite.out" 2>"$OUT/rowrite.err" || rc=$?
cat "$OUT/rowrite.out"
sed 's/^/[rowrite] /' "$OUT/rowrite.err" >&2
[ "$rc" -eq 0 ] || rmp_fail "rmp-raw rowrite failed (exit $rc)"
grep -qx "VALUE 40000" "$OUT/rowrite.out" ||
	rmp_fail "the read-only key did not read 40000"
grep -qx "WRITE remote access error" "$OUT/rowrite.out" ||
	rmp_fail "the read-only key's WRITE did not fail with a remote access error"

echo go >&"$share_fd"
exec {share_fd}>&-
rc=0
wait "$share" || rc=$?
cat "$OUT/share.out"
sed 's/^/[share] /' "$OUT/share.err" >&2
[ "$rc" -eq 0 ] || rmp_fail "rmp-test share failed (exit $rc)"
grep -q '^share: ok$' "$OUT/share.out" || rmp_fail "rmp-test share did not finish"

# Audit: 4 threads + read-only + rowrite + 2 later attaches; 1 takeover
# revoking 6 keys (owner, 4 threads, read-only; rowrite's connection is
# gone); 1 free.
id=$(sed 's|.*/\([0-9a-fA-F]*\)-.*|\1|' <<<"$token" | tr A-F a-f)
n=$(grep -c "audit: attach tenant=test .* lease=$id " "$RMP_DLOG")
[ "$n" -eq 8 ] || rmp_fail "$n audit attach lines for lease $id, want 8"
grep -qE "audit: takeover tenant=test client=rmp-test peer=[^ ]+ lease=$id revoked=6 access=0x7$" \
	"$RMP_DLOG" || rmp_fail "no audit takeover line revoking 6 keys of lease $id"
grep -qE "audit: grant tenant=test client=rmp-test peer=[^ ]+ lease=$id bytes=4096 " \
	"$RMP_DLOG" || rmp_fail "no audit grant line for lease $id"
grep -qE "audit: free tenant=test client=rmp-test peer=[^ ]+ lease=$id bytes=4096 holders=3$" \
	"$RMP_DLOG" || rmp_fail "no audit free line (3 holders) for lease $id"
secret=${token##*-}
[ ${#secret} -eq 16 ] && grep -qiF "$secret" "$OUT/share.out" ||
	rmp_fail "cannot take the secret out of the token"
grep -qiF "$secret" "$RMP_DLOG" && rmp_fail "the lease secret is in the daemon log"
# Neither half of the tenant key's hex in any output (control: in the
# key file they are found).
hex=$(cat "$RMP_KEY")
pats=(-e "${hex:0:32}" -e "${hex:32:32}")
grep -qiF "${pats[@]}" "$RMP_KEY" || rmp_fail "the key patterns do not match the key"
leaks=$(grep -liF "${pats[@]}" "$OUT"/* "$RMP_DLOG")
[ -z "$leaks" ] || rmp_fail "tenant key text found in:" $leaks
daemon_stop
rmp_pass

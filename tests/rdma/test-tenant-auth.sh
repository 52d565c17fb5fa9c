#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-tenant-auth.sh PORT -- tenants and authentication.
#
#  - tenant b, holding tenant a's lease id and secret, can neither attach,
#    renew nor free it (-EPERM, detail RMP_DETAIL_TENANT); another
#    connection of a can renew and attach it;
#  - refused, each with its reason and nothing given: a wrong key (AUTH
#    -EKEYREJECTED, detail RMP_DETAIL_BAD_PROOF, then the server closes),
#    an unknown tenant (accepted, then AUTH -EKEYREJECTED with
#    RMP_DETAIL_BAD_PROOF, word for word what a wrong key gets, so that
#    a peer cannot learn which tenant names exist), an anonymous client
#    while anonymous access is off (reason 8), a proof replayed from
#    another connection (-EKEYREJECTED, RMP_DETAIL_REPLAYED), a request
#    before AUTH (-EACCES, RMP_DETAIL_NOT_AUTHED), the right key's proof
#    for another server's address, as a relay forwards it (-EKEYREJECTED,
#    RMP_DETAIL_BAD_PROOF); the library reports the same (-EKEYREJECTED,
#    -ECONNREFUSED);
#  - a lease with a ttl of 1 s expires;
#  - the daemon log has the audit lines of all this (grant, deny, free,
#    expire, auth-fail with each reason) and no tenant key, no lease
#    secret; no client output holds a tenant key;
#  - with [anonymous] enabled = yes an anonymous client can allocate (as
#    tenant "anonymous"), but not touch a's lease;
#  - listening on 0.0.0.0, a's clients authenticate (the proof names the
#    address they dialed) and a proof for another server is refused.
source "$(dirname "$0")/lib.sh"
rmp_init tenant-auth "$1"
akey=$RMP_TMP/a.key
bkey=$RMP_TMP/b.key
wrongkey=$RMP_TMP/wrong.key
rmp_keygen "$akey"
rmp_keygen "$bkey"
rmp_keygen "$wrongkey"
cat >>"$RMP_CONF" <<CONF
[tenant.a]
key_file = $akey
[tenant.b]
key_file = $bkey
CONF
# Every refusal below counts against this one address: no cool-down.
rmp_conf server auth_failures_per_minute 0
rmp_conf lease ttl_min 1s
rmp_conf lease expiry_tick 100ms

as_a() { RMPOOL_TENANT=a RMPOOL_KEY_FILE=$akey "$@"; }
as_b() { RMPOOL_TENANT=b RMPOOL_KEY_FILE=$bkey "$@"; }

# Everything the clients print is kept, to look for secrets at the end.
OUT=$RMP_TMP/out
mkdir -p "$OUT"
# run NAME CMD... -- CMD with its stdout in $OUT/NAME.out (also shown) and
# its stderr in $OUT/NAME.err (shown prefixed); CMD's status.
run() {
	local name=$1 rc=0
	shift
	"$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?
	cat "$OUT/$name.out"
	sed "s/^/[$name] /" "$OUT/$name.err" >&2
	return "$rc"
}
# field NAME FIELD -- the value after FIELD in $OUT/NAME.out.
field() {
	awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' \
		"$OUT/$1.out"
}
# log_count REGEX -- lines of the daemon log matching REGEX.
log_count() {
	grep -cE "$1" "$RMP_DLOG"
}
# expect_log_count N REGEX -- exactly N lines of the daemon log match.
expect_log_count() {
	local n
	n=$(log_count "$2")
	[ "$n" -eq "$1" ] || rmp_fail "daemon log: $n line(s) match '$2', want $1"
}
# hex16 ID -- a lease id as the daemon logs it.
hex16() { printf '%016x' "$1"; }

daemon_start

# ---- a's lease, b's attempts, a's renew.
run a-alloc as_a rmp_raw alloc 4096 60 --token || rmp_fail "a: alloc failed"
token_a=$(sed -n 's/^TOKEN //p' "$OUT/a-alloc.out")
read -r _ _ _ _ id_a < <(grep '^LEASE ' "$OUT/a-alloc.out")
[ -n "$token_a" ] && [ -n "$id_a" ] || rmp_fail "a: no token or id"
echo "a's lease: $id_a"

run b-attach as_b rmp_raw byid attach "$token_a" --expect EPERM --detail 7 ||
	rmp_fail "b could attach a's lease (or was refused otherwise)"
run b-renew as_b rmp_raw byid renew "$token_a" --ttl 600 --expect EPERM \
	--detail 7 || rmp_fail "b could renew a's lease"
run b-free as_b rmp_raw byid free "$token_a" --expect EPERM --detail 7 ||
	rmp_fail "b could free a's lease"
run b-stat as_b rmp_raw tstat || rmp_fail "b: tstat failed"
[ "$(field b-stat tenant_leases)" = 0 ] || rmp_fail "b has leases"

run a-renew as_a rmp_raw byid renew "$token_a" --ttl 900 ||
	rmp_fail "another connection of a could not renew a's lease"
grep -qx "RENEW ttl_ms=900000" "$OUT/a-renew.out" ||
	rmp_fail "a's renew to 900 s answered '$(cat "$OUT/a-renew.out")'"
run a-attach as_a rmp_raw byid attach "$token_a" --read ||
	rmp_fail "another connection of a could not attach a's lease"
grep -q '^ATTACH access=0x7 ' "$OUT/a-attach.out" ||
	rmp_fail "a's attach did not get a read-write-atomic key"
grep -qx "VALUE 0" "$OUT/a-attach.out" ||
	rmp_fail "a fresh lease did not read 0 through the attached key"
run a-stat as_a rmp_raw tstat || rmp_fail "a: tstat failed"
[ "$(field a-stat tenant_leases)" = 1 ] && [ "$(field a-stat tenant_bytes)" = 4096 ] ||
	rmp_fail "a's STAT: $(cat "$OUT/a-stat.out"), want 1 lease, 4096 bytes"

# ---- refusals.
run wrong-key as_a rmp_raw auth wrong-key || rmp_fail "wrong key: not refused as it should be"
run wrong-key-lib env RMPOOL_TENANT=a RMPOOL_KEY_FILE="$wrongkey" \
	"$RMP_TESTBIN" connect "$RMP_TEST_ADDR" "$RMP_PORT" EKEYREJECTED ||
	rmp_fail "librmpool with a wrong key: not -EKEYREJECTED"
run unknown env RMPOOL_TENANT=nosuch RMPOOL_KEY_FILE="$akey" \
	"$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" connect auth:wrong-key ||
	rmp_fail "unknown tenant: not refused at AUTH as a wrong key"
run unknown-lib env RMPOOL_TENANT=nosuch RMPOOL_KEY_FILE="$akey" \
	"$RMP_TESTBIN" connect "$RMP_TEST_ADDR" "$RMP_PORT" EKEYREJECTED ||
	rmp_fail "librmpool, unknown tenant: not -EKEYREJECTED"
# What the client hears is the wrong key's, but for the tenant's name.
told_wrong=$(sed 's/tenant a\b/tenant NAME/g' "$OUT/wrong-key-lib.out")
told_unknown=$(sed 's/tenant nosuch\b/tenant NAME/g' "$OUT/unknown-lib.out")
echo "wrong key: $told_wrong"
echo "unknown tenant: $told_unknown"
[ -n "$told_wrong" ] && [ "$told_wrong" = "$told_unknown" ] ||
	rmp_fail "librmpool tells an unknown tenant from a wrong key"
run anon env RMPOOL_TENANT= "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" \
	connect anonymous || rmp_fail "anonymous: not rejected with reason 8"
run anon-lib env RMPOOL_TENANT= "$RMP_TESTBIN" connect "$RMP_TEST_ADDR" \
	"$RMP_PORT" ECONNREFUSED || rmp_fail "librmpool, anonymous: not -ECONNREFUSED"
grep -q "anonymous access is disabled" "$OUT/anon-lib.out" ||
	rmp_fail "librmpool's last error does not say anonymous access is disabled"
run replay as_a rmp_raw auth replay || rmp_fail "a replayed proof: not refused as it should be"
run before-auth as_a rmp_raw auth before-auth ||
	rmp_fail "a request before AUTH: not refused as it should be"
run relay as_a rmp_raw auth relay ||
	rmp_fail "a proof for another server: not refused as it should be"
# None of them left a lease or a key behind.
run a-stat2 as_a rmp_raw tstat || rmp_fail "a: tstat failed"
[ "$(field a-stat2 leases)" = 1 ] && [ "$(field a-stat2 tenant_leases)" = 1 ] ||
	rmp_fail "after the refusals: $(cat "$OUT/a-stat2.out"), want 1 lease (a's)"

# ---- expiry.
run e-alloc as_a rmp_raw alloc 4096 1 --token || rmp_fail "a: alloc with ttl 1 failed"
token_e=$(sed -n 's/^TOKEN //p' "$OUT/e-alloc.out")
read -r _ _ _ _ id_e < <(grep '^LEASE ' "$OUT/e-alloc.out")
sleep 2.5
run e-renew as_a rmp_raw byid renew "$token_e" --ttl 60 --expect EKEYEXPIRED ||
	rmp_fail "a lease with ttl 1 s could still be renewed after 2.5 s"

# ---- a frees its lease (b could not).
run a-free as_a rmp_raw byid free "$token_a" || rmp_fail "a could not free its lease"
run a-attach2 as_a rmp_raw byid attach "$token_a" --expect ENOENT ||
	rmp_fail "a freed lease could still be attached"

# ---- the audit trail.
H_A=$(hex16 "$id_a")
H_E=$(hex16 "$id_e")
expect_log_count 1 "audit: grant tenant=a client=rmp-raw-alloc peer=[^ ]+ lease=$H_A bytes=4096 "
expect_log_count 3 "audit: deny tenant=b client=rmp-raw-byid peer=[^ ]+ lease=$H_A owner=a$"
expect_log_count 1 "audit: attach tenant=a client=rmp-raw-byid peer=[^ ]+ lease=$H_A "
expect_log_count 1 "audit: free tenant=a client=rmp-raw-byid peer=[^ ]+ lease=$H_A "
expect_log_count 1 "audit: grant tenant=a .* lease=$H_E bytes=4096 ttl_ms=1000 "
expect_log_count 1 "audit: expire tenant=a client=- peer=- lease=$H_E "
expect_log_count 2 "audit: auth-fail tenant=a client=rmp-raw-auth peer=[^ ]+ reason=wrong-key$"
expect_log_count 1 "audit: auth-fail tenant=a client=rmp-test peer=[^ ]+ reason=wrong-key$"
expect_log_count 1 "audit: auth-fail tenant=a client=rmp-raw-auth peer=[^ ]+ reason=replayed-proof$"
expect_log_count 1 "audit: auth-fail tenant=a client=rmp-raw-auth peer=[^ ]+ reason=request-before-auth$"
expect_log_count 2 "audit: auth-fail tenant=nosuch client=rmp-[a-z-]+ peer=[^ ]+ reason=unknown-tenant$"
expect_log_count 2 "audit: auth-fail tenant=- client=rmp-[a-z-]+ peer=[^ ]+ reason=anonymous-disabled$"
expect_log_count 9 "audit: auth-fail "
daemon_stop
cp "$RMP_DLOG" "$RMP_TMP/run1.log"

# ---- anonymous enabled.
printf '[anonymous]\nenabled = yes\n' >>"$RMP_CONF"
daemon_start
run anon-alloc env RMPOOL_TENANT= "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" \
	alloc 4096 60 --free || rmp_fail "anonymous enabled: an anonymous ALLOC failed"
run anon-lib2 env RMPOOL_TENANT= "$RMP_TESTBIN" connect "$RMP_TEST_ADDR" \
	"$RMP_PORT" 0 || rmp_fail "anonymous enabled: librmpool could not connect"
expect_log_count 1 "audit: grant tenant=anonymous client=rmp-raw-alloc "
run c-alloc as_a rmp_raw alloc 4096 60 --token || rmp_fail "a: alloc failed"
token_c=$(sed -n 's/^TOKEN //p' "$OUT/c-alloc.out")
run anon-attach env RMPOOL_TENANT= "$RMP_RAW" "$RMP_TEST_ADDR" "$RMP_PORT" \
	byid attach "$token_c" --expect EPERM --detail 7 ||
	rmp_fail "an anonymous client could attach a's lease"
run c-free as_a rmp_raw byid free "$token_c" || rmp_fail "a could not free its lease"
daemon_stop
cp "$RMP_DLOG" "$RMP_TMP/run2.log"

# ---- listening on 0.0.0.0 (the default): the local address of a
# connection is the one the client dialed, so proofs still match, and a
# proof for another server is still refused.
rmp_conf server listen 0.0.0.0
daemon_start
run wild-alloc as_a rmp_raw alloc 4096 60 --free ||
	rmp_fail "listening on 0.0.0.0: a could not authenticate and allocate"
run wild-lib env RMPOOL_TENANT=a RMPOOL_KEY_FILE="$akey" "$RMP_TESTBIN" \
	connect "$RMP_TEST_ADDR" "$RMP_PORT" 0 ||
	rmp_fail "listening on 0.0.0.0: librmpool could not authenticate"
run wild-relay as_a rmp_raw auth relay ||
	rmp_fail "listening on 0.0.0.0: a proof for another server was not refused"
expect_log_count 1 "audit: auth-fail tenant=a client=rmp-raw-auth peer=[^ ]+ reason=wrong-key$"
expect_log_count 0 "reason=foreign-address"
daemon_stop

# ---- no secret anywhere it does not belong. Half a key (32 of its 64
# hex digits) is too much as well.
pats=()
for k in "$RMP_KEY" "$akey" "$bkey" "$wrongkey"; do
	hex=$(cat "$k")
	[ ${#hex} -eq 64 ] || rmp_fail "key file $k does not hold 64 hex digits"
	pats+=(-e "${hex:0:32}" -e "${hex:32:32}")
done
# Control: the patterns do find the keys where they are.
[ "$(grep -liF "${pats[@]}" "$RMP_KEY" "$akey" "$bkey" "$wrongkey" | wc -l)" -eq 4 ] ||
	rmp_fail "the key patterns do not even match the key files"
leaks=$(grep -liF "${pats[@]}" "$RMP_TMP/run1.log" "$RMP_TMP/run2.log" \
	"$RMP_DLOG" "$OUT"/*)
[ -z "$leaks" ] || rmp_fail "tenant key text found in:" $leaks
pats=()
for t in "$token_a" "$token_e" "$token_c"; do
	secret=${t##*-}
	[ ${#secret} -eq 16 ] || rmp_fail "cannot take the secret out of a token"
	pats+=(-e "$secret")
done
# Control: the patterns do find the secrets in the tokens printed.
[ "$(grep -liF "${pats[@]}" "$OUT/a-alloc.out" "$OUT/e-alloc.out" "$OUT/c-alloc.out" | wc -l)" -eq 3 ] ||
	rmp_fail "the secret patterns do not even match the tokens printed"
leaks=$(grep -liF "${pats[@]}" "$RMP_TMP/run1.log" "$RMP_TMP/run2.log" \
	"$RMP_DLOG")
[ -z "$leaks" ] || rmp_fail "a lease secret is in the daemon log:" $leaks
echo "no tenant key in the daemon logs or $(ls "$OUT" | wc -l) client outputs;" \
	"no lease secret in the daemon logs"
rmp_pass

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster-trust.sh PORT -- a node registered in etcd that cannot
# prove the tenant's key, and a tenant holding another's token, get
# nothing: three daemons (n1..n3 on racks r1..r3, 8 MiB pools) and a
# rogue one, node "evil" (rack r4, the most free bytes: 16 MiB), built
# from this tree with its tenant check changed to accept every proof
# (rmpoold-rogue) and a key of its own for tenant test. `rmpool -C alloc
# --replicas 2`, `--ec 2+1` and a Python Cluster.alloc place nothing on
# it, and its pool file never holds the bytes written; `rmpool -C nodes --check`
# says why it is skipped; a cluster client naming no tenant is refused
# unless it asks for anonymous access. Tenant b, shown a's cluster
# token, seals a record of its own for it (its members b's, a higher
# epoch) and puts it in etcd: a fresh attacher of a's never follows it
# (the seal needs a's key), and b cannot read a's. A rail at the rogue's
# address (with a second device) is skipped, unproven.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster-trust "$1"
py_start
B_KEY=$RMP_TMP/b.key
rmp_keygen "$B_KEY"
CL_POOL=([1]=8M [2]=8M [3]=8M)
CL_LABELS=([1]="rack=r1" [2]="rack=r2" [3]="rack=r3")
CL_CONF=$(printf '[tenant.b]\nkey_file = %s' "$B_KEY")
cluster_up
CLUSTER=etcd://${EURL#http://}
FORGE=$RMP_BUILD_ROOT/tests/rdma/rmp-forge
as_b() { RMPOOL_TENANT=b RMPOOL_KEY_FILE=$B_KEY "$@"; }

# the rogue: its pool in a file, to look into
ROGUE_STATE=/dev/hugepages/rmp-cluster-trust-$RMP_PORT
rmp_at_exit 'rm -rf "$ROGUE_STATE"'
rm -rf "$ROGUE_STATE"
mkdir -m 700 "$ROGUE_STATE" || rmp_fail "cannot make $ROGUE_STATE"
CL_NODE[4]=evil CL_POOL[4]=16M CL_LABELS[4]="rack=r4"
cluster_add 4
rmp_keygen "$RMP_TMP/rogue.key"
sed -i -e "s|^key_file = $RMP_KEY\$|key_file = $RMP_TMP/rogue.key|" \
	-e "s|^\[pool\]$|[pool]\nstate_dir = $ROGUE_STATE|" \
	"${RMP_D_DIR[4]}/rmpoold.conf"
# With a second device the rogue listens there on n1's port: a rail
# named at that address (step 6) leads to it.
ROGUE_ADDR=$RMP_TEST_ADDR ROGUE_PORT=${CL_PORT[4]}
if [ -n "${RMP_TEST_ADDR2:-}" ]; then
	ROGUE_ADDR=$RMP_TEST_ADDR2 ROGUE_PORT=${CL_PORT[1]}
	sed -i -e "s|^listen = .*|listen = $ROGUE_ADDR|" \
		-e "s|^port = .*|port = $ROGUE_PORT|" "${RMP_D_DIR[4]}/rmpoold.conf"
fi
RMPOOLD=$RMP_BUILD_ROOT/tests/rdma/rmpoold-rogue on_daemon 4 daemon_spawn
on_daemon 4 daemon_listening
cl_wait_state 4 registered 30 || rmp_fail "the rogue did not register"

# rogue_has FILE -- the rogue's pool file holds FILE's first 64 bytes
rogue_has() {
	local f
	f=$(find "$ROGUE_STATE" -type f -name 'pool*' | head -n 1)
	[ -n "$f" ] || rmp_fail "the rogue has no pool file in $ROGUE_STATE"
	grep -qaF "$(head -c 64 "$1")" "$f"
}
# rogue_leases -- leases the rogue holds now
rogue_leases() {
	local st
	on_daemon 4 ctl_json st status
	jget "d['leases']" <<<"$st"
}

# the secret: text lines, so that grep -F finds them in a pool file
for i in $(seq 1 60000); do
	echo "tenant-a-secret-$RMP_PORT-$i-$RANDOM"
done | head -c $((1 << 20)) >"$RMP_TMP/secret.bin"
rogue_has "$RMP_TMP/secret.bin" && rmp_fail "the secret is in the rogue already"

# 1. the command: mirrored, 2 replicas; evil has the most room
tok=$("$RMPOOL" -C "$CLUSTER" alloc 1M --replicas 2 --ttl 300) ||
	rmp_fail "rmpool -C alloc --replicas 2 failed"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/secret.bin" ||
	fail_later "writing the secret failed"
"$RMPOOL" -C "$CLUSTER" read "$tok" | cmp -s - "$RMP_TMP/secret.bin" ||
	fail_later "the secret did not read back"
expect_eq "leases on the rogue after rmpool -C alloc" "$(rogue_leases)" 0
rogue_has "$RMP_TMP/secret.bin" &&
	fail_later "the rogue's pool holds tenant a's secret (rmpool -C alloc)"

# 1b. erasure coded, 2+1 (three members on three nodes; evil would be
# one of them if its record were taken on trust)
tok=$("$RMPOOL" -C "$CLUSTER" alloc 1M --ec 2+1 --ttl 300) ||
	rmp_fail "rmpool -C alloc --ec 2+1 failed"
"$RMPOOL" -C "$CLUSTER" write "$tok" <"$RMP_TMP/secret.bin" ||
	fail_later "writing the secret to the coded lease failed"
"$RMPOOL" -C "$CLUSTER" read "$tok" | cmp -s - "$RMP_TMP/secret.bin" ||
	fail_later "the secret did not read back from the coded lease"
expect_eq "leases on the rogue after rmpool -C alloc --ec 2+1" \
	"$(rogue_leases)" 0
rogue_has "$RMP_TMP/secret.bin" &&
	fail_later "the rogue's pool holds tenant a's secret (--ec 2+1)"

# 2. Python: Cluster.alloc, mirrored; its replicas are not on evil
out=$(rmp_python -c "
import sys, rmpool
with rmpool.Cluster(sys.argv[1]) as c:
    l = c.alloc(1 << 20, replicas=2, free_on_exit=False)
    l.write(open(sys.argv[2], 'rb').read())
    for t in l.replica_tokens:
        print('replica', t.split('/')[2])
    print('token', l.token)
" "$CLUSTER" "$RMP_TMP/secret.bin" 2>&1)
case $? in
0) ;;
77) echo "no rmpool extension: Python's Cluster.alloc not tried" ;;
*) fail_later "Cluster.alloc: $out" ;;
esac
echo "$out" | grep -v '^token'
[ -z "$out" ] || expect_eq "Python replicas" "$(grep -c '^replica ' \
	<<<"$out")" 2
grep -qF "replica $ROGUE_ADDR:$ROGUE_PORT" <<<"$out" &&
	fail_later "a Python replica is on the rogue: $out"
expect_eq "leases on the rogue after Cluster.alloc" "$(rogue_leases)" 0
rogue_has "$RMP_TMP/secret.bin" &&
	fail_later "the rogue's pool holds tenant a's secret (Cluster.alloc)"

# 3. nodes --check: evil skipped, and why; the others proven
out=$("$RMPOOL" -C "$CLUSTER" nodes --check) || fail_later "nodes --check"
echo "$out"
grep -q "^evil .*SKIPPED: it did not prove tenant test's key" <<<"$out" ||
	fail_later "nodes --check does not say why evil is skipped"
expect_eq "nodes proven" "$(grep -c '  proven$' <<<"$out")" 3
json=$("$RMPOOL" -C "$CLUSTER" nodes --check --json) || fail_later "--json"
expect_eq "evil's proven" "$(jget "[n['proven'] for n in d['nodes'] \
	if n['node'] == 'evil'][0]" <<<"$json")" -1

# 4. no tenant: refused, unless asked for
if RMPOOL_TENANT= RMPOOL_KEY_FILE= "$RMPOOL" -C "$CLUSTER" nodes \
	>/dev/null 2>"$RMP_TMP/anon.err"; then
	fail_later "an anonymous cluster client was not refused"
fi
grep -q "anonymous client cannot tell" "$RMP_TMP/anon.err" ||
	fail_later "anonymous refusal: $(cat "$RMP_TMP/anon.err")"
RMPOOL_TENANT= RMPOOL_KEY_FILE= "$RMPOOL" --anonymous-cluster -C \
	"$CLUSTER" nodes >/dev/null || fail_later "--anonymous-cluster refused"

# 5. tenant b, shown a's token, forges a's record: its members b's own
# leases (holding b's bytes), a higher epoch, sealed under b's key
head -c $((1 << 20)) /dev/zero | tr '\0' 'B' >"$RMP_TMP/b.bin"
bm=()
for i in 1 2; do
	t=$(as_b "$RMPOOL" -s "${CL_SERVER[i]}" alloc 1M --ttl 300) ||
		rmp_fail "b's lease on n$i"
	as_b "$RMPOOL" write "$t" <"$RMP_TMP/b.bin" || rmp_fail "b's write"
	bm+=("$t")
done
key=/rmpool/$("$FORGE" key "$tok") || rmp_fail "rmp-forge key"
before=$(etcdctl --endpoints="$EURL" get "$key" -w json | jget \
	"d['kvs'][0]['mod_revision']")
as_b "$FORGE" seal "$tok" 1000 "${bm[@]}" >"$RMP_TMP/forged.bin" ||
	rmp_fail "rmp-forge seal"
etcdctl --endpoints="$EURL" put "$key" <"$RMP_TMP/forged.bin" >/dev/null ||
	rmp_fail "putting the forged record"
after=$(etcdctl --endpoints="$EURL" get "$key" -w json | jget \
	"d['kvs'][0]['mod_revision']")
[ "$after" != "$before" ] || rmp_fail "the forged record is not in etcd"
# a fresh attacher of a's: never b's bytes (a clear refusal)
if "$RMPOOL" -C "$CLUSTER" read "$tok" >"$RMP_TMP/a.out" \
	2>"$RMP_TMP/a.err"; then
	cmp -s "$RMP_TMP/a.out" "$RMP_TMP/b.bin" &&
		fail_later "a's reader followed b's forged record"
	cmp -s "$RMP_TMP/a.out" "$RMP_TMP/secret.bin" ||
		fail_later "a's reader read neither its bytes nor an error"
else
	echo "a's fresh read after the forgery: $(cat "$RMP_TMP/a.err")"
	grep -q "does not open" "$RMP_TMP/a.err" ||
		fail_later "a's read: $(cat "$RMP_TMP/a.err")"
fi
# b cannot read a's lease either way
if as_b "$RMPOOL" -C "$CLUSTER" read "$tok" >"$RMP_TMP/b.out" 2>/dev/null &&
	cmp -s "$RMP_TMP/b.out" "$RMP_TMP/secret.bin"; then
	fail_later "tenant b read tenant a's secret"
fi

# 6. a rail at the rogue's address (a node record in etcd may name any):
# the rail does not prove the tenant's key, so it is skipped, and the
# bytes all go over rail 0, to n1
if [ -n "${RMP_TEST_ADDR2:-}" ]; then
	rails="$RMP_TEST_ADDR,$ROGUE_ADDR:$ROGUE_PORT"
	t=$("$RMPOOL" -s "$rails" alloc 1M --ttl 300 2>"$RMP_TMP/rail.err") ||
		rmp_fail "alloc over rails $rails: $(cat "$RMP_TMP/rail.err")"
	cat "$RMP_TMP/rail.err"
	grep -qF "rail 1 ($ROGUE_ADDR) skipped" "$RMP_TMP/rail.err" &&
		grep -q "could not prove it holds tenant test's key" \
			"$RMP_TMP/rail.err" ||
		fail_later "the rogue rail was not skipped as unproven"
	"$RMPOOL" -s "$rails" write "$t" <"$RMP_TMP/secret.bin" 2>/dev/null ||
		fail_later "writing over rails failed"
	"$RMPOOL" -s "$rails" read "$t" 2>/dev/null |
		cmp -s - "$RMP_TMP/secret.bin" || fail_later "rails read back"
	expect_eq "leases on the rogue after the rails' alloc" \
		"$(rogue_leases)" 0
	rogue_has "$RMP_TMP/secret.bin" &&
		fail_later "the rogue's pool holds the bytes written over rails"
	id=${t##*/}
	grep -qi "${id%%-*}" "${RMP_D_DIR[4]}/rmpoold.log" &&
		fail_later "the rogue heard of lease ${id%%-*} (an ATTACH over its rail)"
else
	echo "no second RDMA device: a rogue rail not tried"
fi

for i in 1 2 3 4; do
	on_daemon "$i" daemon_stop
done
rmp_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-admin-json.sh PORT -- rmpoolctl's figures: they parse, they agree
# with rmpool stat and with each other, and the filters filter.
#
# Three leases: 4 KiB held by a connected rmp-raw (tenant test, 900 s),
# 8 KiB (tenant test, 1800 s) and 64 KiB (tenant other, 3600 s), the last
# two of clients that left. (Deadlines far off: a step can take seconds
# on a TCG VM under ASan, and no lease may end during the test.) Then:
# 1. status --json agrees with rmpool stat --json on every figure both
#    have; its sums agree with leases --json;
# 2. leases --tenant, --client (name of a holder, name of the allocating
#    client, #N), --expiring-within select exactly the right leases, and
#    show agrees with leases about each;
# 3. clients --json: the holder, its tenant, lease and bytes;
# 4. the tables print what the JSON says, sizes as 4K, 64K, 16M;
# 5. reload applies a new ttl_max (extend obeys it) and refuses a
#    broken file naming its line, changing nothing;
# 6. every --json output is one JSON document.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

rmp_init admin-json "$1"
py_start

# sorted_json ID... -- the ids as a sorted JSON list, as jget prints it.
sorted_json() {
	pyrun -c 'import json, sys; print(json.dumps(sorted(sys.argv[1:])))' "$@"
}

other_key=$RMP_TMP/other.key
rmp_keygen "$other_key"
printf '[tenant.other]\nkey_file = %s\n' "$other_key" >>"$RMP_CONF"
daemon_start
hold_start
h_id=$(printf %016x "$HOLD_ID")
out=$(rmp_raw alloc 8192 1800) || rmp_fail "rmp-raw alloc 8192 failed"
read -r _ _ _ _ a_id < <(grep '^LEASE ' <<<"$out")
a_id=$(printf %016x "$a_id")
t_o=$(date +%s)
out=$(RMPOOL_TENANT=other RMPOOL_KEY_FILE=$other_key rmp_raw alloc 65536 3600) ||
	rmp_fail "rmp-raw alloc 65536 as tenant other failed"
read -r _ _ _ _ o_id < <(grep '^LEASE ' <<<"$out")
o_id=$(printf %016x "$o_id")
echo "leases: $h_id (held), $a_id (1800 s), $o_id (tenant other)"

echo "==== 1. status agrees with rmpool stat"
ctl status || rmp_fail "rmpoolctl status failed"
ctl_json st status
stat=$(rmpool stat --json) || rmp_fail "rmpool stat --json failed"
echo "rmpoolctl: $st"
echo "rmpool:    $stat"
for f in pool_bytes free_bytes largest_free leases keys hugepage_size \
	 numa_node keys_mode quarantined_bytes zeroing_bytes; do
	expect_eq "status.$f vs rmpool stat" "$(jget "d['$f']" <<<"$st")" \
		"$(jget "d['$f']" <<<"$stat")"
done
expect_eq "status: leases, leased_bytes, keys, clients" \
	"$(jget '[d["leases"], d["leased_bytes"], d["keys"], d["clients"]]' <<<"$st")" \
	"[3, $((4096 + 8192 + 65536)), 1, 1]"
expect_eq "status: pool_bytes" "$(jget 'd["pool_bytes"]' <<<"$st")" $((16 << 20))
expect_eq "status: free + leased" \
	"$(jget 'd["free_bytes"] + d["leased_bytes"]' <<<"$st")" $((16 << 20))
expect_eq "status: device, port, draining" \
	"$(jget '[d["device"] != "", d["port"], d["draining"]]' <<<"$st")" \
	"[true, $RMP_PORT, false]"
now=$(date +%s)
started=$(jget 'd["started"]' <<<"$st")
[ "$started" -le "$now" ] && [ "$started" -ge $((now - 300)) ] ||
	fail_later "status: started $started is not a unix time of the last 5 min ($now)"

echo "==== 2. leases and its filters"
ctl leases || rmp_fail "rmpoolctl leases failed"
ctl_json all leases
expect_eq "leases: count" "$(jget 'd["count"]' <<<"$all")" 3
expect_eq "leases: ids" "$(jget 'sorted(l["id"] for l in d["leases"])' <<<"$all")" \
	"$(sorted_json "$h_id" "$a_id" "$o_id")"
expect_eq "leases: sum of bytes = status.leased_bytes" \
	"$(jget 'sum(l["bytes"] for l in d["leases"])' <<<"$all")" \
	"$(jget 'd["leased_bytes"]' <<<"$st")"
expect_eq "leases: sum of keys = status.keys" \
	"$(jget 'sum(l["keys"] for l in d["leases"])' <<<"$all")" \
	"$(jget 'd["keys"]' <<<"$st")"
# ids ARGS... -- the sorted ids of rmpoolctl --json leases ARGS.
ids() {
	local j
	ctl_json j leases "$@"
	jget 'sorted(l["id"] for l in d["leases"])' <<<"$j"
}
expect_eq "--tenant other" "$(ids --tenant other)" "[\"$o_id\"]"
expect_eq "--tenant test" "$(ids --tenant test)" \
	"$(sorted_json "$h_id" "$a_id")"
expect_eq "--tenant nobody" "$(ids --tenant nobody)" "[]"
expect_eq "--expiring-within 1000s" "$(ids --expiring-within 1000s)" "[\"$h_id\"]"
expect_eq "--expiring-within 0" "$(ids --expiring-within 0)" "[]"
expect_eq "--client rmp-raw-hold" "$(ids --client rmp-raw-hold)" "[\"$h_id\"]"
expect_eq "--client rmp-raw-alloc" "$(ids --client rmp-raw-alloc)" \
	"$(sorted_json "$a_id" "$o_id")"
ctl_json cl clients
n=$(jget '[c["client"] for c in d["clients"] if c["name"] == "rmp-raw-hold"][0]' <<<"$cl")
expect_eq "--client #$n" "$(ids --client "#$n")" "[\"$h_id\"]"
expect_eq "--tenant test --expiring-within 40m" \
	"$(ids --tenant test --expiring-within 40m)" \
	"$(sorted_json "$h_id" "$a_id")"
expect_eq "--tenant other --expiring-within 40m" \
	"$(ids --tenant other --expiring-within 40m)" "[]"
expect_eq "--tenant other --expiring-within 2h" \
	"$(ids --tenant other --expiring-within 2h)" "[\"$o_id\"]"
ctl_fails 1 "no client #99999" leases --client '#99999'
ctl_fails 2 "not a duration" leases --expiring-within soon
ctl_fails 2 "for leases only" status --tenant test
ctl leases --tenant nobody | grep -qx "no leases" ||
	fail_later "an empty leases table does not say 'no leases'"
for id in "$h_id" "$a_id" "$o_id"; do
	ctl_json one show "$id"
	expect_eq "show $id agrees with leases" \
		"$(jget '{k: v for k, v in d["lease"].items() if k not in ("holders", "ttl_left_ms", "age_ms", "deadline", "created")}' <<<"$one")" \
		"$(jget "[{k: v for k, v in l.items() if k not in ('ttl_left_ms', 'age_ms', 'deadline', 'created')} for l in d['leases'] if l['id'] == '$id'][0]" <<<"$all")"
done
ctl_json one show "$o_id"
expect_eq "show $o_id: tenant, owner, bytes, keys, holders, access, flags" \
	"$(jget '[d["lease"][k] for k in ("tenant", "owner", "bytes", "keys", "holders", "access", "auto_renew", "ephemeral")]' <<<"$one")" \
	'["other", "rmp-raw-alloc", 65536, 0, [], ["read", "write", "atomic"], false, false]'
left=$(jget 'd["lease"]["ttl_left_ms"]' <<<"$one")
deadline=$(jget 'd["lease"]["deadline"]' <<<"$one")
now=$(date +%s)
# Granted between t_o and now, for 3600 s (unix seconds, 1 s of slack).
[ "$left" -le 3600000 ] && [ "$left" -ge $(((3600 - (now - t_o) - 1) * 1000)) ] ||
	fail_later "show $o_id: ttl_left_ms $left, $((now - t_o)) s after the ALLOC of 3600 s"
[ "$deadline" -ge $((t_o + 3599)) ] && [ "$deadline" -le $((now + 3601)) ] ||
	fail_later "show $o_id: deadline $deadline is not 3600 s after the ALLOC ($t_o .. $now)"

echo "==== 3. clients"
ctl clients || rmp_fail "rmpoolctl clients failed"
expect_eq "clients: the holder" \
	"$(jget '[(c["name"], c["tenant"], c["authenticated"], c["state"], c["leases"], c["bytes"], c["peer"].rsplit(":", 1)[0]) for c in d["clients"]]' <<<"$cl")" \
	"[[\"rmp-raw-hold\", \"test\", true, \"established\", 1, 4096, \"$RMP_TEST_ADDR\"]]"
since=$(jget 'd["clients"][0]["connected_since"]' <<<"$cl")
[ "$since" -le "$now" ] && [ "$since" -ge $((now - 300)) ] ||
	fail_later "clients: connected_since $since is not of the last 5 min"

echo "==== 4. the tables"
ctl status | tee "$RMP_TMP/status.txt" >/dev/null
grep -qE '^pool +16M, ' "$RMP_TMP/status.txt" ||
	fail_later "the status table has no 'pool 16M, ...' line"
grep -qE "^device +${RMP_TEST_DEV:-rxe0} port 1, NUMA node [0-9]+: pool 16M, " \
	"$RMP_TMP/status.txt" ||
	fail_later "the status table has no 'device ... port 1, NUMA node N: pool 16M' line"
grep -qE '^leases +3 of 65536 \(max_leases\), 76K, 1 key' "$RMP_TMP/status.txt" ||
	fail_later "the status table has no 'leases 3 of 65536 (max_leases), 76K, 1 key(s)' line"
ctl leases >"$RMP_TMP/leases.txt"
cat "$RMP_TMP/leases.txt"
expect_eq "lines of the leases table" "$(wc -l <"$RMP_TMP/leases.txt")" 4
grep -qE "^$o_id +other +rmp-raw-alloc +64K +0 +granted " "$RMP_TMP/leases.txt" ||
	fail_later "the leases table has no row for $o_id as it should be"
ctl show "$h_id" >"$RMP_TMP/show.txt"
cat "$RMP_TMP/show.txt"
grep -qE "^  #$n +rmp-raw-hold +$RMP_TEST_ADDR:[0-9]+ +rwa +live \(owner\)" \
	"$RMP_TMP/show.txt" || fail_later "show has no holder row for #$n"
ctl clients | grep -qE "^#$n +rmp-raw-hold +test +$RMP_TEST_ADDR:[0-9]+ .* 1 +4K " ||
	fail_later "the clients table has no row for #$n"

echo "==== 5. reload"
ctl_json r reload
echo "reload: $r"
expect_eq "reload of an unchanged file" "$(jget 'd["ok"]' <<<"$r")" true
rmp_conf lease ttl_max 2h
ctl reload || fail_later "rmpoolctl reload failed"
ctl_fails 1 "out of range: 1 .. 7200000" extend "$o_id" 3h
ctl extend "$o_id" 90m || fail_later "extend within the reloaded ttl_max failed"
printf '[lease]\nbogus_key = 1\n' >>"$RMP_CONF"
ctl_fails 1 "reload failed, nothing changed: .*rmpoold.conf:[0-9]+: .*bogus_key" reload
sed -i '/^bogus_key = /d' "$RMP_CONF"
ctl reload || fail_later "reload of the repaired file failed"

echo "==== 6. the other commands' --json"
ctl_json r extend "$a_id" 1m
expect_eq "extend --json: id, ttl_ms" \
	"$(jget '[d["ok"], d["lease"]["id"], d["lease"]["ttl_ms"]]' <<<"$r")" \
	"[true, \"$a_id\", 60000]"
ctl_json r revoke "$a_id"
expect_eq "revoke --json" "$(jget '[d["ok"], d["id"]]' <<<"$r")" \
	"[true, \"$a_id\"]"
ctl_json r drain
expect_eq "drain --json" "$(jget '[d["ok"], d["drained"]]' <<<"$r")" "[true, true]"
ctl_json r undrain
expect_eq "undrain --json" "$(jget '[d["ok"], d["drained"]]' <<<"$r")" "[true, false]"
ctl_json r leases --tenant nobody
expect_eq "empty leases --json" "$(jget '[d["ok"], d["leases"], d["count"]]' <<<"$r")" \
	"[true, [], 0]"
hold_stop || fail_later "the holder's lease did not keep working"
ctl_json r clients
expect_eq "clients --json with nobody connected" "$(jget 'd["clients"]' <<<"$r")" "[]"
ctl clients | grep -qx "no clients" || fail_later "an empty clients table does not say 'no clients'"
daemon_stop
rmp_done

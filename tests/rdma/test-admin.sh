#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-admin.sh PORT MODE -- what rmpoolctl does to leases and clients
# (lease_keys = MODE: window or region).
#
# 1. revoke: a holder's lease is shown with its holder, address and
#    size; after `rmpoolctl revoke ID` the holder's RENEW gets
#    -EKEYEXPIRED and its READ with the lease's rkey a remote access
#    error; the lease is gone from show; the extent comes back zeroed
#    (the next lease over it reads zeros where the pattern was).
# 2. drain: ALLOC gets -ESHUTDOWN (from a connected client and a new
#    one) while existing leases keep working; undrain restores ALLOC.
# 3. extend: the deadline in show moves, a holder attaching sees it,
#    and the lease lives past its first ttl; bad TTLs are refused.
# 4. disconnect: by name (the ephemeral lease of that client ends), a
#    name two clients share is refused, by number.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

mode=$2
rmp_init "admin-$mode" "$1"
py_start
rmp_conf lease lease_keys "$mode"
daemon_start

echo "==== 1. revoke"
raw_bg_start victim '^LEASE ' revoked
read -r _ v_addr v_rkey v_len v_id <<<"$RAW_BG_LINE"
id=$(printf %016x "$v_id")
echo "victim: lease $id at $v_addr rkey $v_rkey, $v_len bytes"
ctl show "$id" || rmp_fail "rmpoolctl show $id failed"
ctl_json j show "$id"
expect_eq "show: id" "$(jget 'd["lease"]["id"]' <<<"$j")" "$id"
expect_eq "show: tenant" "$(jget 'd["lease"]["tenant"]' <<<"$j")" test
expect_eq "show: owner" "$(jget 'd["lease"]["owner"]' <<<"$j")" \
	rmp-raw-revoked
expect_eq "show: bytes" "$(jget 'd["lease"]["bytes"]' <<<"$j")" "$v_len"
expect_eq "show: addr" "$(jget 'hex(d["lease"]["addr"])' <<<"$j")" "$v_addr"
expect_eq "show: end - addr" \
	"$(jget 'd["lease"]["end"] - d["lease"]["addr"]' <<<"$j")" "$v_len"
expect_eq "show: state" "$(jget 'd["lease"]["state"]' <<<"$j")" granted
expect_eq "show: keys_mode" "$(jget 'd["lease"]["keys_mode"]' <<<"$j")" \
	"$mode"
expect_eq "show: holders" "$(jget '[(h["name"], h["access"], h["key"],
	h["owner"]) for h in d["lease"]["holders"]]' <<<"$j")" \
	'[["rmp-raw-revoked", ["read", "write", "atomic"], "live", true]]'
ctl revoke "$id" | tee "$RMP_TMP/revoke.out" ||
	rmp_fail "rmpoolctl revoke $id failed"
grep -q "lease $id revoked" "$RMP_TMP/revoke.out" ||
	fail_later "rmpoolctl revoke printed no 'lease $id revoked'"
raw_bg_stop victim ||
	fail_later "the victim's key or lease still worked after the revoke"
expect_eq "victim's RENEW" "$(grep '^RENEW' "$RMP_TMP/victim.out")" \
	"RENEW -EKEYEXPIRED"
expect_eq "victim's READ" "$(grep '^READ' "$RMP_TMP/victim.out")" \
	"READ remote access error"
daemon_log_has "audit: revoke tenant=test .*lease=$id .*by=\"rmpoolctl uid 0 pid [0-9]+\"" ||
	fail_later "no audit line for the revoke naming rmpoolctl uid 0"
ctl_fails 1 "no such lease $id" show "$id"
ctl_fails 1 "no such lease $id" revoke "$id"

# The extent comes back zeroed. With an otherwise empty pool the same
# size lands on the same extent; if the allocator chose another, a lease
# of the whole pool covers it for sure.
wait_idle_pool
tok=$(rmpool alloc "$v_len" --ttl 60 --json) || rmp_fail "rmpool alloc failed"
n_addr=$(jget 'd["remote_addr"]' <<<"$tok")
n_tok=$(jget 'd["token"]' <<<"$tok")
if [ $((n_addr)) -ne $((v_addr)) ]; then
	echo "the next $v_len-byte lease is at $n_addr, not $v_addr:" \
		"taking the whole pool"
	rmpool free "$n_tok" || rmp_fail "rmpool free failed"
	wait_idle_pool
	pool=$(ctl --json status | jget 'd["pool_bytes"]')
	tok=$(rmpool alloc "$pool" --ttl 60 --json) ||
		rmp_fail "rmpool alloc of the whole pool failed"
	n_addr=$(jget 'd["remote_addr"]' <<<"$tok")
	n_tok=$(jget 'd["token"]' <<<"$tok")
fi
off=$((v_addr - n_addr))
echo "the revoked bytes are at offset $off of the next lease ($n_addr)"
nonzero=$(rmpool read "$n_tok" --offset "$off" --length "$v_len" |
	od -An -v -tx1 | tr -d ' \n' | tr -d 0 | wc -c)
expect_eq "non-zero hex digits of the revoked extent, read again" \
	"$nonzero" 0
rmpool free "$n_tok" || fail_later "rmpool free of the next lease failed"

echo "==== 2. drain and undrain"
hold_start
raw_bg_start probe '^READY' drainprobe
ctl drain | tee "$RMP_TMP/drain.out" || rmp_fail "rmpoolctl drain failed"
grep -q "^drained: no new leases" "$RMP_TMP/drain.out" ||
	fail_later "rmpoolctl drain said no 'drained: no new leases'"
ctl_json j status
expect_eq "status while drained: draining, drained, stopping" \
	"$(jget '[d["draining"], d["drained"], d["stopping"]]' <<<"$j")" \
	"[true, true, false]"
rmp_raw alloc 4096 60 --expect ESHUTDOWN ||
	fail_later "a new connection's ALLOC while drained did not get -ESHUTDOWN"
raw_bg_send probe
raw_bg_stop probe ||
	fail_later "drained: ALLOC not -ESHUTDOWN, or READ/WRITE/FREE failed"
daemon_log_has "drain by rmpoolctl uid 0" ||
	fail_later "no log line for the drain naming rmpoolctl"
ctl undrain || rmp_fail "rmpoolctl undrain failed"
ctl_json j status
expect_eq "status after undrain: draining, drained" \
	"$(jget '[d["draining"], d["drained"]]' <<<"$j")" "[false, false]"
rmp_raw alloc 4096 60 --free ||
	fail_later "ALLOC after undrain failed"
hold_stop || fail_later "the holder's lease did not keep working through the drain"

echo "==== 3. extend"
# A first ttl long enough to extend it in time on a slow (TCG) VM.
t0=$(date +%s%N)
out=$(rmp_raw alloc 4096 20 --token) || rmp_fail "rmp-raw alloc failed"
e_tok=$(sed -n 's/^TOKEN //p' <<<"$out")
read -r _ _ _ _ e_id < <(grep '^LEASE ' <<<"$out")
e_id=$(printf %016x "$e_id")
ctl_json j show "$e_id"
expect_eq "ttl_ms before the extend" "$(jget 'd["lease"]["ttl_ms"]' <<<"$j")" 20000
t_before=$(jget 'd["lease"]["deadline"]' <<<"$j")
t_ext=$(date +%s%N)
ctl extend "$e_id" 10m || rmp_fail "rmpoolctl extend $e_id 10m failed"
ctl_json j show "$e_id"
expect_eq "ttl_ms after the extend" "$(jget 'd["lease"]["ttl_ms"]' <<<"$j")" 600000
left=$(jget 'd["lease"]["ttl_left_ms"]' <<<"$j")
t_after=$(jget 'd["lease"]["deadline"]' <<<"$j")
echo "deadline $t_before -> $t_after, $left ms left"
[ "$left" -gt 590000 ] && [ "$left" -le 600000 ] ||
	fail_later "ttl_left_ms after extend 10m is $left"
[ $((t_after - t_before)) -ge 570 ] ||
	fail_later "the deadline moved by $((t_after - t_before)) s, want ~580"
# Past the lease's first deadline (20 s after the ALLOC) and a tick.
sleep "$(awk -v ms=$((($(date +%s%N) - t0) / 1000000)) \
	'BEGIN { s = (21500 - ms) / 1000; print s > 0 ? s : 0 }')"
out=$(rmp_raw byid attach "$e_tok") ||
	fail_later "attach after the first deadline failed: the extend did not hold"
echo "$out"
h_left=$(sed -n 's/^ATTACH .*ttl_ms=\([0-9]*\).*/\1/p' <<<"$out")
# The holder's ttl counts from the extend: 10 min less the time since
# (measured from before the extend, so never too little), 1 s of slack.
since=$((($(date +%s%N) - t_ext) / 1000000))
echo "holder sees ttl_ms=$h_left, $since ms after the extend"
[ -n "$h_left" ] && [ "$h_left" -le 600000 ] &&
	[ "$h_left" -ge $((600000 - since - 1000)) ] ||
	fail_later "a holder sees ttl_ms '$h_left' $since ms after extend 10m"
ctl_fails 1 "out of range" extend "$e_id" 0
ctl_fails 1 "out of range" extend "$e_id" 2d
ctl_fails 1 "no such lease 00000000deadbeef" extend deadbeef 1m
ctl_fails 2 "not a duration" extend "$e_id" soon
ctl_fails 2 "not a lease id" extend xyz 1m
check rmp_raw byid free "$e_tok"

echo "==== 4. disconnect"
mkfifo "$RMP_TMP/eph.in"
"$RMPOOL" -s "$RMP_SERVER" --name admin-eph alloc 4K --ephemeral --json \
	<"$RMP_TMP/eph.in" >"$RMP_TMP/eph.out" 2>"$RMP_TMP/eph.err" &
eph_pid=$!
exec {eph_fd}>"$RMP_TMP/eph.in"
for _ in $(seq 1 300); do
	[ -s "$RMP_TMP/eph.out" ] && break
	sleep 0.1
done
eph_id=$(jget 'd["id"]' <"$RMP_TMP/eph.out") ||
	rmp_fail "rmpool alloc --ephemeral printed no lease"
ctl clients || rmp_fail "rmpoolctl clients failed"
ctl_json j clients
expect_eq "clients called admin-eph: tenant, leases, bytes" \
	"$(jget '[(c["tenant"], c["leases"], c["bytes"]) for c in d["clients"]
		  if c["name"] == "admin-eph"]' <<<"$j")" '[["test", 1, 4096]]'
ctl_json j leases --client admin-eph
expect_eq "leases of admin-eph" \
	"$(jget '[(l["id"], l["ephemeral"]) for l in d["leases"]]' <<<"$j")" \
	"[[\"$eph_id\", true]]"
ctl disconnect admin-eph || rmp_fail "rmpoolctl disconnect admin-eph failed"
for _ in $(seq 1 100); do
	ctl show "$eph_id" >/dev/null 2>&1 || break
	sleep 0.1
done
ctl_fails 1 "no such lease $eph_id" show "$eph_id"
ctl_json j clients
expect_eq "clients called admin-eph after the disconnect" \
	"$(jget '[c for c in d["clients"] if c["name"] == "admin-eph"]' <<<"$j")" \
	"[]"
daemon_log_has "audit: disconnect tenant=test client=admin-eph .*by=\"rmpoolctl uid 0" ||
	fail_later "no audit line for the disconnect"
exec {eph_fd}>&-
for _ in $(seq 1 100); do pid_running "$eph_pid" || break; sleep 0.1; done
pid_running "$eph_pid" && { kill "$eph_pid"; fail_later "rmpool kept running after its disconnect"; }
wait "$eph_pid" 2>/dev/null

raw_bg_start idle1 '^CONNECTED' idle
raw_bg_start idle2 '^CONNECTED' idle
ctl_fails 1 "more than one client is called rmp-raw-idle" disconnect rmp-raw-idle
ctl_fails 1 "no client nobody-here" disconnect nobody-here
ctl_json j clients
n=$(jget '[c["client"] for c in d["clients"] if c["name"] == "rmp-raw-idle"][0]' <<<"$j")
ctl disconnect "#$n" || rmp_fail "rmpoolctl disconnect #$n failed"
sleep 0.5
ctl_json j clients
expect_eq "rmp-raw-idle clients left" \
	"$(jget 'len([c for c in d["clients"] if c["name"] == "rmp-raw-idle"])' <<<"$j")" 1
# One idle client lost its connection (and says so), the other did not.
rc1=0 rc2=0
raw_bg_stop idle1 || rc1=$?
raw_bg_stop idle2 || rc2=$?
expect_eq "idle clients that lost their connection" $(( (rc1 != 0) + (rc2 != 0) )) 1
daemon_stop
[ -e "$(admin_sock)" ] && fail_later "the admin socket is still there after the stop"
rmp_done

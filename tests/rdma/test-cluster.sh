#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-cluster.sh PORT -- rmpoold registers itself in a real etcd and
# leaves at SIGTERM.
#
# An etcd of the test's own (loopback ports PORT + 2000 and PORT + 3000,
# data in the test's directory). The daemon with [cluster] etcd set
# registers as node rdma-n1: `rmpoolctl status` (text and --json) and the
# metrics say registered, the node record in etcd holds the listen
# address, port, device and labels; a lease of half the pool rewrites
# the record's free bytes within two seconds; SIGTERM removes the key at
# once (the lease is revoked), not a ttl later. etcd stops at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"
source "$(dirname "$0")/lib-cluster.sh"
rmp_init cluster "$1"
py_start
etcd_start
KEY=/rmpool/nodes/rdma-n1

rmp_conf cluster etcd "$EURL"
rmp_conf cluster node rdma-n1
rmp_conf cluster labels "rack=r1 zone=z1"
rmp_conf cluster ttl 3s
daemon_start

# status_cluster EXPR -- EXPR of the status reply's "cluster" object.
status_cluster() {
	local st
	ctl_json st status
	jget "d['cluster']$1" <<<"$st"
}

state=
for _ in $(seq 1 200); do
	state=$(status_cluster "['state']")
	[ "$state" = registered ] && break
	sleep 0.1
done
expect_eq "cluster state" "$state" registered
expect_eq "cluster node" "$(status_cluster "['node']")" rdma-n1
[ "$(status_cluster "['last_keepalive']")" -gt 0 ] ||
	fail_later "no keep-alive time in the status"
ctl status | grep -E '^cluster +node rdma-n1: registered' ||
	fail_later "rmpoolctl status has no cluster line"

rec=$(etcd_get "$KEY")
echo "record: $rec"
expect_eq "record node" "$(jget "d['node']" <<<"$rec")" rdma-n1
expect_eq "record address" "$(jget "d['addresses'][0]" <<<"$rec")" \
	"$RMP_TEST_ADDR"
expect_eq "record port" "$(jget "d['port']" <<<"$rec")" "$RMP_PORT"
expect_eq "record rack" "$(jget "d['labels']['rack']" <<<"$rec")" r1
[ -n "$(jget "d['device']" <<<"$rec")" ] || fail_later "record has no device"
free0=$(jget "d['free_bytes']" <<<"$rec")

metrics=$(pyrun -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
	"http://127.0.0.1:$((RMP_PORT + 1000))/metrics")
grep -E '^rmpool_cluster_registered 1$' <<<"$metrics" ||
	fail_later "metrics do not say registered"
grep -E '^rmpool_cluster_info\{node="rdma-n1",state="registered"\} 1$' \
	<<<"$metrics" || fail_later "metrics have no cluster info"

# Half the pool leased: the record follows within two seconds.
tok=$(rmpool alloc 8M --ttl 60) || rmp_fail "alloc failed"
free1=$free0
for _ in $(seq 1 30); do
	rec=$(etcd_get "$KEY")
	free1=$(jget "d['free_bytes']" <<<"$rec")
	[ "$free1" != "$free0" ] && break
	sleep 0.1
done
[ "$free1" -lt "$free0" ] ||
	fail_later "free_bytes in etcd stayed $free1 after a lease of 8M"
rmpool free "$tok" || fail_later "free failed"

# SIGTERM: the key is gone when the daemon has exited, not a ttl later.
daemon_stop
left=$(etcd_get "$KEY")
[ -z "$left" ] || fail_later "the key is still in etcd after the stop"
daemon_log_has 'cluster: left \(lease' ||
	fail_later "the daemon did not say it left the cluster"
etcd_stop
rmp_done

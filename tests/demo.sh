#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh -- set everything up and run the main job on a real RDMA device:
# rmpoold with the shipped config, then the rmpool client allocates a
# lease, writes a file into it, reads it back and compares. The shipped
# config admits tenant "default" only, whose key file the demo creates
# (with `rmpool keygen`) in a scratch directory instead of /etc/rmpool.
#
# The device is the host's own when RMP_TEST_ADDR names an address of one,
# otherwise the Soft-RoCE VM (tests/vm/run-in-vm.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

inside() {
	local build=$top/build addr=$RMP_TEST_ADDR log tok rc=0
	work=$(mktemp -d)
	log=$work/rmpoold.log
	pid=
	trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
	rmpool() { "$build/client/rmpool" -s "$addr" "$@"; }
	rmpoolctl() { "$build/daemon/rmpoolctl" -s "$work/admin.sock" "$@"; }

	echo "== rmpool keygen > default.key (tenant default's key, mode 600)"
	(umask 077 && "$build/client/rmpool" keygen >"$work/default.key")
	# The shipped config, with the key and the admin socket in $work.
	sed -e "s|^key_file = /etc/rmpool/default.key|key_file = $work/default.key|" \
		-e "s|^#admin_socket = .*|admin_socket = $work/admin.sock|" \
		conf/rmpoold.conf >"$work/rmpoold.conf"
	export RMPOOL_TENANT=default RMPOOL_KEY_FILE=$work/default.key
	echo "== rmpoold -c rmpoold.conf (conf/rmpoold.conf, key_file in $work)"
	"$build/daemon/rmpoold" -c "$work/rmpoold.conf" >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		grep -q "listening on" "$log" && break
		kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
		sleep 0.1
	done
	cat "$log"

	echo "== rmpool stat"
	rmpool stat
	echo "== rmpool alloc 4M --ttl 300"
	tok=$(rmpool alloc 4M --ttl 300)
	echo "$tok"
	head -c 3000000 /dev/urandom >"$work/in"
	echo "== rmpool write TOKEN < file (3000000 bytes)"
	rmpool write "$tok" <"$work/in"
	echo "== rmpool read TOKEN --length 3000000 > copy"
	rmpool read "$tok" --length 3000000 >"$work/out"
	if cmp "$work/in" "$work/out"; then
		echo "read back: identical ($(sha256sum <"$work/out" | cut -c1-16)...)"
	else
		echo "read back: DIFFERENT"
		rc=1
	fi
	echo "== the lease, from the server's point of view (rmpool stat)"
	rmpool stat | grep -E "leases|free"
	echo "== the operator's view: rmpoolctl status, rmpoolctl leases"
	rmpoolctl status
	rmpoolctl leases
	echo "== Prometheus metrics (127.0.0.1:9471/metrics), a few lines"
	python3 -c 'import urllib.request as u
print(u.urlopen("http://127.0.0.1:9471/metrics", timeout=10).read().decode())' |
		grep -E '^rmpool_(lease_grants_total|pool_free_bytes|leases\{state="granted")' ||
		rc=1
	echo "== rmpool free TOKEN"
	rmpool free "$tok"
	kill -TERM $pid
	wait $pid || rc=1
	pid=
	echo "== rmpoold log"
	tail -n 8 "$log"
	return $rc
}

if [ "${1:-}" = --inside ]; then
	rc=0
	inside || rc=$?
	exit $rc
fi
tests/setup.sh build
if [ -n "${RMP_TEST_ADDR:-}" ]; then
	exec "$0" --inside
fi
# The shipped config pins a 1 GiB pool on the NIC's node (node 1 in the
# VM): reserve enough 2 MiB pages there.
export RMP_VM_HUGEPAGES=${RMP_VM_HUGEPAGES:-520}
exec tests/vm/run-in-vm.sh --build-dir build --mem 4096 -- \
	"$top/tests/demo.sh" --inside

#!/bin/sh
# SPDX-License-Identifier: MIT
# smoke.sh -- run the RDMA smoke test as two processes: server and client.
# Usage: smoke.sh SMOKE_BINARY PORT [--corrupt]
set -u
bin=$1 port=$2 corrupt=${3:-}
addr=${RMP_TEST_ADDR:-}
if [ -z "$addr" ]; then
	echo "RMP_TEST_ADDR is not set: no RDMA device to test on" >&2
	exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"; [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null' EXIT

"$bin" server "$addr" "$port" >"$out" &
spid=$!
i=0
until grep -q listening "$out"; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$spid" 2>/dev/null; then
		echo "smoke server did not start" >&2
		exit 1
	fi
	sleep 0.1
done
"$bin" client "$addr" "$port" $corrupt
crc=$?
wait "$spid"
src=$?
spid=
cat "$out"
echo "client exit $crc, server exit $src"
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ]

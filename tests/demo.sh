#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh -- set everything up and run the main job on a real RDMA device:
# the host's own when RMP_TEST_ADDR names an address of one, otherwise the
# Soft-RoCE VM (tests/vm/run-in-vm.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "${1:-}" = --inside ]; then
	# The job itself, on the device at RMP_TEST_ADDR.
	exec tests/rdma/smoke.sh build/tests/rdma/rdma-smoke 7600
fi
tests/setup.sh build
if [ -n "${RMP_TEST_ADDR:-}" ]; then
	exec "$0" --inside
fi
exec tests/vm/run-in-vm.sh --build-dir build -- "$top/tests/demo.sh" --inside

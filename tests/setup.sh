#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh -- install what rmpool needs on Debian 12 and build it.
#
# Usage: tests/setup.sh [BUILD_DIR [MESON_SETUP_ARGS...]]
# Installs the missing packages (apt-get; sudo when not root), configures
# BUILD_DIR (default: build) with meson if needed, and builds it: every
# target, or only those RMP_NINJA_TARGETS names (space separated).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
case $build in /*) ;; *) build=$top/$build ;; esac

packages=(
	# build
	build-essential meson ninja-build pkg-config clang llvm
	libibverbs-dev librdmacm-dev libnuma-dev libevent-dev libinih-dev
	libsystemd-dev libsodium-dev libjson-c-dev libssl-dev libisal-dev scdoc
	# operations: unit checks (systemd-analyze) and a real Prometheus
	systemd prometheus
	# the cluster layer's tests start a real etcd (suite etcd), some with
	# certificates they make
	etcd-server etcd-client openssl
	# RDMA user space and the baselines
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	iproute2 numactl strace gnuplot-nox
	# the Python module (client/python) and its tests, for Debian's python3;
	# its wheel (pyproject.toml, test python-wheel): meson-python, pip, venv
	python3-dev python3-pytest python3-numpy
	python3-mesonpy python3-pip python3-venv
	# a lease as a block device (client/nbdkit): nbdkit's plugin header,
	# nbdkit and the kernel's NBD client, ext4's tools; fio, the
	# block-device benchmark (tests/perf/compare-nbd.sh)
	nbdkit nbdkit-plugin-dev nbd-client e2fsprogs fio
	# the Soft-RoCE VM
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd
)

install_missing() {
	local missing=() p sudo=
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "setup: installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
}

install_missing
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top" "$@"
fi
# shellcheck disable=SC2086 # a list of target names
ninja -C "$build" ${RMP_NINJA_TARGETS:-}

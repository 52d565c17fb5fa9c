#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-no-core.sh PORT -- rmpoold leaves no core dump: it would hold
# tenant keys (an inline one here), lease secrets and tenants' bytes.
#
# With core dumps allowed (ulimit -c unlimited, kernel.core_pattern a
# file of this test's), the daemon holds a lease written with a known
# pattern, then gets SIGQUIT (whose default action dumps core; the
# sanitizer leaves it alone). No core file may appear. The guest is this
# test's alone to change core_pattern in (it is put back at the end).
source "$(dirname "$0")/lib.sh"

rmp_init no-core "$1"
[ -n "${RMP_IN_VM:-}" ] ||
	{ echo "changes kernel.core_pattern: only in the test VM" >&2; exit 77; }
pattern_was=$(cat /proc/sys/kernel/core_pattern)
cleanup_core() {
	rmp_cleanup
	echo "$pattern_was" >/proc/sys/kernel/core_pattern
}
trap cleanup_core EXIT
CORES=$(mktemp -d "${TMPDIR:-/tmp}/rmp-cores.XXXXXX")
echo "$CORES/core.%e.%p" >/proc/sys/kernel/core_pattern ||
	rmp_fail "cannot set kernel.core_pattern"
# The key inline, in a file closed to others (as rmpoold demands).
key=$(cat "$RMP_KEY")
sed -i "s|^key_file = $RMP_KEY$|key = $key|" "$RMP_CONF"
chmod 600 "$RMP_CONF"
grep -q "^key = " "$RMP_CONF" || rmp_fail "the test's key is not inline"

ulimit -c unlimited
daemon_start
hold_start
kill -QUIT "$RMP_DPID"
daemon_wait_exit 30 || rmp_fail "rmpoold still runs 30 s after SIGQUIT"
echo "rmpoold ended with status $RMP_DRC (SIGQUIT)"
hold_stop >/dev/null 2>&1
sleep 1
ls -l "$CORES"
if [ -n "$(ls -A "$CORES")" ]; then
	f=$(ls "$CORES" | head -1)
	if grep -qF "$key" "$CORES/$f"; then
		echo "the core holds the tenant key"
	fi
	fail_later "rmpoold left a core dump ($f, $(stat -c %s "$CORES/$f") bytes)"
fi
rm -rf "$CORES"
rmp_done

# SPDX-License-Identifier: MIT
# lib-admin.sh -- helpers of the admin socket tests; source after lib.sh
# and rmp_init (the daemon's admin socket is lib.sh's $RMP_ADMIN_SOCK, of
# the daemon daemon_select chose).

RMPOOLCTL=$RMP_BUILD_ROOT/daemon/rmpoolctl

# admin_sock -- the path of this test's (selected daemon's) admin socket.
admin_sock() {
	echo "$RMP_ADMIN_SOCK"
}

# ctl ARGS... -- rmpoolctl against this test's daemon.
ctl() {
	"$RMPOOLCTL" -s "$(admin_sock)" "$@"
}

# jget EXPR -- parse stdin as one JSON document (d) and print the Python
# expression EXPR of it: strings as they are, anything else as JSON.
# Fails (status 1, the reason on stderr) when stdin is not JSON.
jget() {
	pyrun --stdin -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))
' "$1"
}

# ctl_json VAR ARGS... -- rmpoolctl --json ARGS into VAR; fails the test
# when it does not exit 0 or its output is not one JSON document.
ctl_json() {
	local __var=$1 __out
	shift
	__out=$(ctl --json "$@") || rmp_fail "rmpoolctl --json $* failed"
	jget 1 <<<"$__out" >/dev/null ||
		rmp_fail "rmpoolctl --json $* printed no JSON: $__out"
	printf -v "$__var" '%s' "$__out"
}

# expect_eq WHAT GOT WANT -- a later failure when they differ.
expect_eq() {
	[ "$2" = "$3" ] || fail_later "$1 is '$2', want '$3'"
}

# ctl_fails STATUS PATTERN ARGS... -- rmpoolctl ARGS must exit with
# STATUS and say something matching PATTERN (grep -E) on stderr.
ctl_fails() {
	local want=$1 re=$2 rc=0 err
	shift 2
	err=$(ctl "$@" 2>&1 >/dev/null) || rc=$?
	echo "rmpoolctl $*: exit $rc: $err"
	[ "$rc" -eq "$want" ] ||
		fail_later "rmpoolctl $* exited $rc, want $want"
	grep -qE -- "$re" <<<"$err" ||
		fail_later "rmpoolctl $* said '$err', want /$re/"
}

# wait_idle_pool [SECONDS] -- wait until no lease, nothing zeroing and the
# whole pool free (default 30 s).
wait_idle_pool() {
	local secs=${1:-30} st
	for _ in $(seq 1 $((secs * 10))); do
		st=$(ctl --json status) || rmp_fail "rmpoolctl status failed"
		[ "$(jget '[d["leases"], d["zeroing_bytes"],
			   d["free_bytes"] == d["pool_bytes"]]' <<<"$st")" = \
			"[0, 0, true]" ] && return 0
		sleep 0.1
	done
	rmp_fail "the pool is not idle after $secs s: $st"
}

#!/bin/sh
# SPDX-License-Identifier: MIT
# check-systemd.sh -- the generated systemd unit and its snippets, offline
# (systemd need not be PID 1). Prints TAP.
#
#   check-systemd.sh UNIT RMPOOLD SYSUSERS TMPFILES [MANPAGE...]
#
# UNIT is the generated rmpoold.service, RMPOOLD the built daemon (staged
# at the unit's ExecStart path), SYSUSERS and TMPFILES the snippets,
# MANPAGEs the built pages (for the Documentation= check; without them
# the check is skipped).
#
#  1. `systemd-analyze verify` of UNIT in a staged root (--root): its
#     exit status and every message about the unit count (verify warns
#     about a bad value or an unknown key but exits 0);
#  2. the same check fails on broken copies of UNIT (so it can fail);
#  3. `systemd-analyze security --offline=true`: the exposure score is
#     printed and must not be above RMP_SECURITY_MAX (default 2.0: the
#     unit reaches 1.7);
#  4. systemd-sysusers makes the user and groups in a staged root, and
#     systemd-tmpfiles the configuration directory (root only).
#
# Run it by hand on any unit file, e.g. a broken one, with the same
# arguments: it exits non-zero when a check fails.
set -u

abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
unit=$(abs "$1") rmpoold=$(abs "$2") sysusers=$(abs "$3") tmpfiles=$(abs "$4")
shift 4

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - # SKIP $*"; }
# diag FILE -- FILE's lines as TAP comments.
diag() { sed 's/^/# /' "$1"; }

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "1..0 # SKIP systemd-analyze not installed"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmp-systemd-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# A root with the host's units, the unit under test, the programs it
# runs (rmpoold from the build) and the manual pages.
root=$tmp/root
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd"
[ -d /usr/lib/systemd/system ] && cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
if [ -L /lib ]; then
	ln -s "$(readlink /lib)" "$root/lib"
elif [ -d /lib/systemd/system ]; then
	mkdir -p "$root/lib/systemd"
	cp -a /lib/systemd/system "$root/lib/systemd/"
fi
name=$(basename "$unit")
man=$tmp/man
have_man=
for page in "$@"; do
	have_man=" (with its man pages)"
	sec=${page##*.}
	mkdir -p "$man/man$sec"
	cp "$page" "$man/man$sec/"
done

# stage UNITFILE -- UNITFILE as the root's unit, with every program its
# Exec lines name: rmpoold from the build, the others from this host.
stage() {
	cp "$1" "$root/etc/systemd/system/$name"
	sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\(\/[^ ]*\).*/\1/p' "$1" | sort -u |
	while read -r prog; do
		mkdir -p "$root$(dirname "$prog")"
		if [ "$(basename "$prog")" = rmpoold ]; then
			cp "$rmpoold" "$root$prog"
		elif [ -e "$prog" ]; then
			cp -L "$prog" "$root$prog"
		fi
	done
}

# verify UNITFILE OUT -- 0 when systemd-analyze verify is happy with it:
# exit status 0 and no message naming the unit.
verify() {
	stage "$1"
	if [ -n "$have_man" ]; then
		set -- --man=yes
		manpath=$man
	else
		set -- --man=no
		manpath=
	fi
	MANPATH=$manpath SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$@" \
		--root="$root" "/etc/systemd/system/$name" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 0 ] && ! grep -q "$name" "$tmp/out"
}

# 1. The unit as generated.
if verify "$unit"; then
	ok "systemd-analyze verify $name$have_man"
else
	not_ok "systemd-analyze verify $name"
fi
diag "$tmp/out"
[ $# -gt 0 ] || skip "Documentation= pages: no man pages built"

# 2. Broken copies must fail the same check.
i=0
for edit in 's/^Type=notify$/Type=notifyy/' \
	    's/^ProtectHome=yes$/ProtectHomes=yes/' \
	    's/^\(ExecStart=[^ ]*\)rmpoold/\1rmpoold-missing/' \
	    's/^\(SystemCallFilter=@system-service\)$/\1 @no-such-group/'; do
	i=$((i + 1))
	sed "$edit" "$unit" >"$tmp/broken$i.service"
	if cmp -s "$unit" "$tmp/broken$i.service"; then
		not_ok "broken copy $i ($edit) differs from the unit"
	elif verify "$tmp/broken$i.service"; then
		not_ok "verify rejects a broken unit ($edit)"
	else
		ok "verify rejects a broken unit ($edit): $(head -n 1 "$tmp/out")"
	fi
done
stage "$unit"

# 3. Exposure score, offline.
max=${RMP_SECURITY_MAX:-2.0}
threshold=$(echo "$max" | awk '{ printf "%d", $1 * 10 + 0.5 }')
SYSTEMD_LOG_COLOR=0 SYSTEMD_COLORS=0 systemd-analyze security --offline=true \
	--threshold="$threshold" --root="$root" \
	"/etc/systemd/system/$name" >"$tmp/sec" 2>&1
rc=$?
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/sec")
grep '✗' "$tmp/sec" | sed 's/  */ /g' >"$tmp/sec-open"
diag "$tmp/sec-open"
if [ $rc -eq 0 ] && [ -n "$score" ]; then
	ok "systemd-analyze security: exposure $score (at most $max)"
else
	diag "$tmp/sec"
	not_ok "systemd-analyze security: exposure ${score:-?} (at most $max)"
fi

# 4. The user, the groups and the configuration directory.
sr=$tmp/sysroot
mkdir -p "$sr/etc"
: >"$sr/etc/passwd"
: >"$sr/etc/group"
if command -v systemd-sysusers >/dev/null 2>&1 &&
   systemd-sysusers --root="$sr" "$sysusers" >"$tmp/su" 2>&1; then
	diag "$tmp/su"
	if grep -q '^rmpool:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$sr/etc/passwd" &&
	   grep -q '^rmpool:x:' "$sr/etc/group" &&
	   grep -q '^rmpool-admin:x:[0-9]*:rmpool$' "$sr/etc/group"; then
		ok "sysusers: user rmpool, groups rmpool and rmpool-admin (rmpool a member)"
	else
		diag "$sr/etc/passwd"
		diag "$sr/etc/group"
		not_ok "sysusers: user rmpool, groups rmpool and rmpool-admin"
	fi
else
	diag "$tmp/su"
	not_ok "systemd-sysusers $(basename "$sysusers")"
fi
dir=$(awk '$1 == "d" { print $2 }' "$tmpfiles")
if [ "$(id -u)" != 0 ]; then
	skip "tmpfiles: $dir (chown needs root)"
elif systemd-tmpfiles --root="$sr" --create "$tmpfiles" >"$tmp/tf" 2>&1; then
	gid=$(awk -F: '$1 == "rmpool" { print $3 }' "$sr/etc/group")
	got=$(stat -c '%a %u %g' "$sr$dir" 2>/dev/null)
	if [ "$got" = "750 0 $gid" ]; then
		ok "tmpfiles: $dir is 0750 root:rmpool"
	else
		not_ok "tmpfiles: $dir is '$got', not '750 0 $gid'"
	fi
else
	diag "$tmp/tf"
	not_ok "systemd-tmpfiles --create $(basename "$tmpfiles")"
fi

echo "1..$n"
[ $failed -eq 0 ]

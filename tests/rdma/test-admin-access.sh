#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-admin-access.sh PORT -- who may use the admin socket, and its file.
#
# With admin_group = users (gid 100, in every Debian /etc/group):
# 1. the socket is 0660 root:users; root gets in; uid 65534 with no
#    groups is refused at connect and told which group it needs; uid
#    65534 with users as a supplementary group, or as its primary group,
#    gets in.
# 2. with the file opened to all (0666), the daemon's own check
#    (SO_PEERCRED, SO_PEERGROUPS) still refuses uid 65534 with a reply
#    naming the group, and logs it.
# 3. the socket is removed at stop; a stale one is replaced at start; a
#    live one (another daemon's) or a regular file in its place stops a
#    second daemon with a message saying what to do, and is left alone.
# 4. an admin_group that does not exist stops the daemon; without
#    admin_group the socket is 0600 and even the users group is refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-admin.sh"

rmp_init admin-access "$1"
rmp_conf server admin_group users
sock=$(admin_sock)
# uid 65534 must reach the socket's directory (mktemp made it 0700).
chmod 711 "$RMP_TMP"
getent group users | grep -q '^users:x:100:' ||
	rmp_fail "this system has no group users with gid 100"

# as GROUPS ARGS... -- rmpoolctl as uid 65534 with primary gid and
# supplementary groups as setpriv takes them: "65534 none", "65534 100",
# "100 none".
as() {
	local gid=$1 groups=$2
	shift 2
	if [ "$groups" = none ]; then
		setpriv --reuid=65534 --regid="$gid" --clear-groups \
			"$RMPOOLCTL" -s "$sock" "$@"
	else
		setpriv --reuid=65534 --regid="$gid" --groups="$groups" \
			"$RMPOOLCTL" -s "$sock" "$@"
	fi
}

# as_fails GID GROUPS PATTERN -- rmpoolctl status as that user must exit
# 1 saying PATTERN.
as_fails() {
	local rc=0 err
	err=$(as "$1" "$2" status 2>&1 >/dev/null) || rc=$?
	echo "as uid 65534 gid $1 groups $2: exit $rc: $err"
	[ "$rc" -eq 1 ] || fail_later "uid 65534 gid $1 groups $2: exit $rc, want 1"
	grep -qE -- "$3" <<<"$err" ||
		fail_later "uid 65534 gid $1 groups $2 was told '$err', want /$3/"
}

# start_fails CONF REGEX -- rmpoold -c CONF must exit non-zero, its log
# matching REGEX, with no sanitizer report.
start_fails() {
	local rc=0 log=$RMP_TMP/fail.log
	timeout 120 "$RMPOOLD" -c "$1" >"$log" 2>&1 || rc=$?
	echo "rmpoold -c ${1##*/}: exit $rc: $(grep -E "$2" "$log")"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
		fail_later "rmpoold exited $rc, want a failure (${1##*/})"
	grep -qE -- "$2" "$log" || {
		cat "$log" >&2
		fail_later "rmpoold's log has no /$2/"
	}
	grep -qE "Sanitizer|runtime error:" "$log" &&
		fail_later "sanitizer report from the failed start"
	return 0
}

echo "==== 1. root and group users in, others out"
daemon_start
expect_eq "socket mode, owner, group" "$(stat -c '%a %U %G' "$sock")" \
	"660 root users"
daemon_log_has "admin socket $sock, for root and group users" ||
	fail_later "no log line saying who may use the admin socket"
ctl status >/dev/null || fail_later "root cannot use the admin socket"
as_fails 65534 none "permission denied on $sock: only root and members of group users may use it"
out=$(as 65534 100 --json status) ||
	fail_later "uid 65534 with supplementary group users was refused"
expect_eq "pool_bytes seen by a member of users" \
	"$(jget 'd["pool_bytes"]' <<<"$out")" $((16 << 20))
out=$(as 100 none --json status) ||
	fail_later "uid 65534 with primary group users was refused"
expect_eq "ok seen with primary group users" "$(jget 'd["ok"]' <<<"$out")" true

echo "==== 2. the daemon checks the peer itself"
chmod 666 "$sock"
as_fails 65534 none "permission denied: only root and members of group users may use the admin socket"
daemon_log_has "admin: refused rmpoolctl uid 65534 pid [0-9]+" ||
	fail_later "the daemon did not log the refused peer"
as 65534 100 status >/dev/null ||
	fail_later "a member of users was refused by the daemon's check"
# A refused peer that sends a request anyway gets the refusal, then EOF.
# (The system's python: a python of root's home is out of reach.)
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"{\"command\":\"status\"}\n")
f = s.makefile("rb")
print(f.readline().decode().strip())
print("EOF" if f.readline() == b"" else "MORE")
' "$sock") || fail_later "python as uid 65534 could not talk to the socket"
expect_eq "the refusal as a python client sees it" "$out" \
'{"ok":false,"error":"permission denied: only root and members of group users may use the admin socket","errno":"EACCES"}
EOF'
chmod 660 "$sock"

echo "==== 3. the socket file: removed, replaced, or left alone"
# Another daemon (another port) on the same admin socket must not take it.
sed -e "s/^port = .*/port = $((RMP_PORT + 1))/" \
	-e "s/^metrics_listen = .*/metrics_listen = 127.0.0.1:$((RMP_PORT + 1001))/" \
	"$RMP_CONF" >"$RMP_TMP/second.conf"
start_fails "$RMP_TMP/second.conf" "admin socket $sock: another process listens on it"
ctl status >/dev/null || fail_later "the first daemon lost its admin socket to a second one"
daemon_stop
[ -e "$sock" ] && fail_later "the admin socket is still there after the stop"
# A stale socket: bound by a process that is gone.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$sock"
[ -S "$sock" ] || rmp_fail "could not make a stale socket"
daemon_start
daemon_log_has "admin socket $sock: replaced a stale socket" ||
	fail_later "no log line about the stale socket"
ctl status >/dev/null || fail_later "no admin socket after replacing a stale one"
daemon_stop
# A regular file is not ours to remove.
echo keep >"$sock"
start_fails "$RMP_CONF" "admin socket $sock: a file that is not a socket is in the way"
expect_eq "the file in the way" "$(cat "$sock")" keep
rm -f "$sock"

echo "==== 4. admin_group: missing group, none"
sed "s/^admin_group = .*/admin_group = rmp-no-such-group/" "$RMP_CONF" \
	>"$RMP_TMP/nogroup.conf"
start_fails "$RMP_TMP/nogroup.conf" "admin_group rmp-no-such-group: no such group"
sed -i '/^admin_group = /d' "$RMP_CONF"
daemon_start
expect_eq "socket mode without admin_group" "$(stat -c '%a %U' "$sock")" \
	"600 root"
ctl status >/dev/null || fail_later "root cannot use the root-only socket"
as_fails 65534 100 "permission denied on $sock: only root may use it"
chmod 666 "$sock"
as_fails 65534 100 "permission denied: only root may use the admin socket"
daemon_stop
rmp_done

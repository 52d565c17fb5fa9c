#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-bind-failure.sh PORT post|complete -- a grant whose window bind
# fails leaves nothing behind and breaks nobody else.
#
#   post      the fault shim makes ibv_post_send refuse the bind, which
#             goes in one post with the ALLOC's reply: nothing is sent, so
#             the lease is freed again (the reply was the only copy of its
#             secret), the connection is closed (ALLOC gets no reply), the
#             extent goes back, the window is deallocated.
#   complete  the shim posts the bind with a length past its MR: the bind
#             completes in error, which moves the client's QP to error:
#             that client's connection is closed (its ALLOC gets no
#             reply), other clients are served, the lease's key is dead.
#
# Either way the daemon frees its protection domain at exit (nothing of
# it leaked) and, in a sanitizer build, leak detection stays on: a leaked
# window or a use after free fails the test.
source "$(dirname "$0")/lib.sh"

mode=${2:-}
case $mode in
post) shim=1 want=ENOTCONN ;;
complete) shim=complete want=ENOTCONN ;;
*) echo "usage: $0 PORT post|complete" >&2; exit 2 ;;
esac
rmp_init "bind-failure-$mode" "$1"
rmp_conf lease lease_keys window
: "${RMP_FAILSHIM:?RMP_FAILSHIM is not set}"
daemon_preload --strict "$RMP_FAILSHIM" "RMP_SHIM_FAIL_BIND=$shim"

daemon_start
daemon_log_has "^failshim: loaded" || rmp_fail "the fault shim is not loaded"
rmp_stat || rmp_fail "STAT failed"
free0=$STAT_FREE

for _ in 1 2 3; do
	rmp_raw alloc 4096 60 --expect "$want" ||
		fail_later "ALLOC with a failing bind did not end in -$want"
done
daemon_log_has "^failshim: .*IBV_WR_BIND_MW" ||
	rmp_fail "no fault was injected: the test would prove nothing"
if [ "$mode" = post ]; then
	[ "$(grep -c 'granted but the reply could not be sent: freed' "$RMP_DLOG")" -eq 3 ] ||
		fail_later "the daemon did not free each lease it could not announce"
fi
if [ "$mode" = complete ]; then
	daemon_log_has "window bind failed" ||
		fail_later "the daemon did not log the failed bind"
fi
rmp_stat || rmp_fail "STAT after the failed grants"
if [ "$mode" = post ]; then
	[ "$STAT_FREE" -eq "$free0" ] ||
		fail_later "free bytes $STAT_FREE after failed grants, $free0 before"
	[ "$STAT_LEASES" -eq 0 ] ||
		fail_later "$STAT_LEASES leases after failed grants, want 0"
fi

daemon_stop
# Every window was deallocated: nothing is left in the PD at exit.
daemon_log_has "ibv_dealloc_pd" &&
	fail_later "the daemon could not free its PD: a window leaked"
rmp_done

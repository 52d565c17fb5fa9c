#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-fence.sh PORT -- after an exclusive ATTACH's reply no write through
# a revoked key lands: the reply waits until the victim's key is proven
# dead on the device.
#
# The victim (rmp-raw scribble --stall) allocates a lease, uses up its
# receive buffers so that the server's replies to it meet RNR (its send
# queue on that connection stalls, and a LOCAL_INV posted there waits
# behind them), and then writes a counter through its key back to back.
# The taker (rmp-raw takeover) attaches the lease exclusively. Once the
# daemon has logged the takeover, the victim posts its receives again:
# the server's RNR retries (about 0.65 s apart, 3 of them) get through,
# its send queue runs, the LOCAL_INV executes and the victim's next WRITE
# is refused (remote access error). The taker reads the lease twice,
# 300 ms apart, after its reply: the bytes must be the same. A daemon
# that answers the ATTACH once the invalidation is posted answers while
# the victim still writes, and the two reads differ. revoke_timeout is
# 8 s, longer than the RNR retries: the invalidation completes, it is
# not the timeout that kills the victim.
source "$(dirname "$0")/lib.sh"

rmp_init fence "$1"
rmp_conf lease lease_keys window
rmp_conf server revoke_timeout 8s

daemon_start

# Both connect first; the victim stalls when told, and the taker's
# ATTACH goes out the moment it has.
raw_bg_start victim '^TOKEN ' scribble --stall
token=${RAW_BG_LINE#TOKEN }
raw_bg_start taker '^READY' takeover "$token" 300
raw_bg_send victim
raw_bg_wait victim '^STALLED'
t0=$(date +%s%N)
raw_bg_send taker

# The takeover is handled (its audit line is out, reply or not): let the
# victim's send queue run again.
end=$((SECONDS + 15))
until daemon_log_has "audit: takeover .*revoked=1"; do
	[ "$SECONDS" -lt "$end" ] ||
		rmp_fail "the daemon logged no takeover within 15 s"
	sleep 0.05
done
echo "takeover handled after $((($(date +%s%N) - t0) / 1000000)) ms;" \
	"the victim posts its receives again"
raw_bg_send victim

raw_bg_wait victim '^RESUMED' 10
echo "victim: ${RAW_BG_LINE}"
[[ $RAW_BG_LINE =~ due=([1-9][0-9]*) ]] ||
	fail_later "the victim's stall had ended before the takeover: the test did not set up its case"
raw_bg_wait taker '^(SAME|CHANGED)' 20
echo "taker: $(grep -m1 '^ATTACHED' "$RMP_TMP/taker.out") ms to the reply," \
	"then $RAW_BG_LINE"
raw_bg_stop taker ||
	fail_later "a write through the revoked key landed after the exclusive ATTACH's reply"
raw_bg_wait victim '^WRITES ' 20
echo "victim: $RAW_BG_LINE"
raw_bg_stop victim ||
	fail_later "the victim's WRITEs did not end with a remote access error"

daemon_stop
rmp_done

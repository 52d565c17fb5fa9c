#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-torn-journal.sh PORT -- the lease journal in the state file is
# damaged at random offsets while rmpoold is down (two seeds). The
# daemon starts anyway, takes back only leases whose records prove
# themselves (each one that comes back holds exactly its old bytes), and
# never hands out memory that a recovered lease covers: a client then
# fills the rest of the pool with other bytes, and every recovered lease
# still reads back intact.
source "$(dirname "$0")/lib.sh"

th_init torn-journal "$1"
N=40 LEN=262144 HITS=12 SIZE_MB=32
export RMP_PAIR_HUGEPAGES=48
sed -i "s|^size = 16M$|size = ${SIZE_MB}M\nmax_leases = 256|" "$TH_CONF"
sed -i "s|^\[server\]$|[server]\ndrain_timeout = 1s|" "$TH_CONF"
pair_boot || th_fail "the two-host bed did not come up"

rmp_test() { th_client "$(printf %q "$RMP_TESTBIN") $*"; }
# damage.py FILE LO HI SEED HITS -- flip HITS random bytes in [LO, HI).
cat >"$TH_DIR/damage.py" <<'PY'
import mmap, os, random, sys
path, lo, hi, seed, hits = sys.argv[1], *map(int, sys.argv[2:])
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
r = random.Random(seed)
for _ in range(hits):
    at = r.randrange(lo, hi)
    m[at] ^= r.randrange(1, 256)
m.close()
PY
base_conf=$TH_CONF

for seed in 1 2; do
	dir=/dev/hugepages/rmp-torn-$TH_PORT-$seed
	# A file per seed: the guests cache what they read of the host's.
	TH_CONF=$TH_DIR/rmpoold-$seed.conf tokens=$TH_DIR/tokens-$seed
	sed "s|^\[pool\]$|[pool]\nstate_dir = $dir|" "$base_conf" >"$TH_CONF"
	th_daemon_start rmpoold-$seed-a
	rmp_test fill $PAIR_SERVER_ADDR $TH_PORT $N $LEN 600 600 $((seed * 100)) \
		>"$tokens" || th_fail "fill failed"
	on server "kill -TERM $TH_DPID; while kill -0 $TH_DPID 2>/dev/null; do sleep 0.1; done"
	# Random bytes of the journal (header and the records in use) flipped,
	# in the state file of the one device served (pool-DEVICE).
	on server "python3 $TH_DIR/damage.py $dir/pool-* $((SIZE_MB << 20)) \
		$((SIZE_MB * 1048576 + 4096 + N * 256)) $seed $HITS" ||
		th_fail "could not damage the journal"
	th_daemon_start rmpoold-$seed-b
	on server "grep -E 'recovered|not recovered|state file' $TH_LOG"
	first=$(rmp_test verify $PAIR_SERVER_ADDR $TH_PORT "$tokens" $LEN $((seed * 100)) -2) ||
		th_fail "seed $seed: a lease came back with wrong bytes, or attach failed: $first"
	echo "seed $seed, $HITS bytes damaged: $first"
	crowd=$(rmp_test crowd $PAIR_SERVER_ADDR $TH_PORT $LEN 7) || th_fail "seed $seed: crowd failed: $crowd"
	again=$(rmp_test verify $PAIR_SERVER_ADDR $TH_PORT "$tokens" $LEN $((seed * 100)) -2) ||
		th_fail "seed $seed: after the pool was filled with other bytes: $again"
	echo "  $crowd; then: $again"
	[ "$first" = "$again" ] || th_check_later "seed $seed: '$first' became '$again'"
	on server "kill -TERM $TH_DPID; while kill -0 $TH_DPID 2>/dev/null; do sleep 0.1; done; rm -rf $dir"
done
th_done

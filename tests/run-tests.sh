#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-tests.sh -- set everything up and run every rmpool test suite.
#
#   unit   host-only tests (codec, tokens, allocator, lease table, config)
#   etcd   the cluster layer against a real etcd each test starts (host
#          only, about 90 s, run beside the rdma stage)
#   rdma   daemon + clients as separate processes on a real RDMA device:
#          the host's own when RMP_TEST_ADDR names an address of one,
#          otherwise inside the Soft-RoCE VM (tests/vm/run-in-vm.sh)
#   twohost  faults between two hosts (loss, dead hosts, restarts) on two
#          linked Soft-RoCE guests (tests/vm/pair.sh), run from this host
#   asan   the unit suite again, and every rdma test but the measurements
#          (suite plain-only), built with -Db_sanitize=address,undefined;
#          the plain build runs the measurements and the tests of suite
#          plain-too (checks a sanitizer hides: memory bounds, RSS, the
#          release build's data path). Without the asan stage the plain
#          build runs every rdma test.
#   fuzz   each libFuzzer target for RMP_FUZZ_SECONDS (default 60) s,
#          beside the twohost stage at idle priority (SCHED_IDLE): the
#          fault bed waits on its faults' timeouts, a third of the host
#          idle, and 60 s there run about as many inputs as 20 s alone
#
# Exits non-zero when anything failed. Set RMP_SKIP_ASAN=1 or
# RMP_SKIP_FUZZ=1 to leave a stage out on a developer machine.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=$top/build
asan=$top/build-asan
fuzz=$top/build-fuzz
werror=()
[ -n "${CI:-}" ] && werror=(-Dwerror=true)
status=0
logs=()

# stage NAME: a new stage; its time is in the table at the end.
stages=()
stage_t0=$(date +%s)
stage() {
	local now
	now=$(date +%s)
	[ ${#stages[@]} -gt 0 ] &&
		stages[-1]+=$'\t'$((now - stage_t0))
	stage_t0=$now
	stages+=("$*")
	printf '\n==== %s ====\n' "$*"
}
ci_t0=$(date +%s)
# run_suite BUILD SUITE LOGBASE: meson test, remember the log.
run_suite() {
	meson test -C "$1" --no-rebuild --print-errorlogs --suite "$2" \
		--logbase "$3" || status=1
	logs+=("$1/meson-logs/$3.json")
}

stage "setup and build"
tests/setup.sh build "${werror[@]}" || exit 1
if [ -z "${RMP_SKIP_ASAN:-}" ]; then
	tests/setup.sh build-asan "${werror[@]}" \
		-Db_sanitize=address,undefined -Db_lundef=false || exit 1
fi
if [ -z "${RMP_SKIP_FUZZ:-}" ]; then
	export RMP_FUZZ_SECONDS=${RMP_FUZZ_SECONDS:-60} # read at setup
	# the fuzz targets only: the rest of that build is never run
	RMP_NINJA_TARGETS=$(cd tests/fuzz && ls fuzz_*.c |
		sed 's|^\(.*\)\.c$|tests/fuzz/\1|' | tr '\n' ' ') \
	CC=clang tests/setup.sh build-fuzz -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false || exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

stage "unit tests"
run_suite "$build" unit unit
[ -z "${RMP_SKIP_ASAN:-}" ] && run_suite "$asan" unit unit-asan

# The etcd suite waits on etcd's timers (ttls, watches) more than it
# computes: it runs on the host beside the RDMA suite (its output shown
# after that), which leaves a core idle while a test runs alone.
etcd_out=$build/meson-logs/etcd-out.txt
meson test -C "$build" --no-rebuild --print-errorlogs --suite etcd \
	--logbase etcd >"$etcd_out" 2>&1 &
etcd_pid=$!
logs+=("$build/meson-logs/etcd.json")

# The RDMA tests run in one device session (one VM boot), each once: in
# the sanitized build, which catches what the plain one does and memory
# and UB errors too, unless it measures (suite plain-only: the plain
# build alone) or checks what a sanitizer hides (suite plain-too: both).
# tests/README.md says why each build is the one. In the VM stdout is
# the serial console, a tty: '| cat' keeps meson's progress animation
# out of the log.
if [ -z "${RMP_SKIP_ASAN:-}" ]; then
	plain_sel="--suite plain-only --suite plain-too"
	# 5000 leases for admin-many, not 10^5 (still far more listing than
	# the socket holds; its memory bound is proven in the plain pass).
	rdma_cmd="set -o pipefail; RMP_ADMIN_LEASES=5000 tests/vm/cpu-busy.sh meson test -C '$asan' --no-rebuild --print-errorlogs --suite rdma --no-suite plain-only --logbase rdma-asan | cat; s=\$?"
	logs+=("$asan/meson-logs/rdma-asan.json")
	rdma_cmd+="; RMP_PLAIN_TOO_ONLY=1 tests/vm/cpu-busy.sh meson test -C '$build' --no-rebuild --print-errorlogs $plain_sel --logbase rdma | cat || s=1"
else
	rdma_cmd="set -o pipefail; tests/vm/cpu-busy.sh meson test -C '$build' --no-rebuild --print-errorlogs --suite rdma --logbase rdma | cat; s=\$?"
fi
logs+=("$build/meson-logs/rdma.json")
rdma_cmd+="; exit \$s"
if [ -n "${RMP_TEST_ADDR:-}" ]; then
	stage "rdma tests on this host's device ($RMP_TEST_ADDR)"
	bash -c "$rdma_cmd" || status=1
else
	stage "rdma tests in the Soft-RoCE VM"
	start=$(date +%s)
	# 4 GiB: free-1g pins a 1 GiB pool on one of the two NUMA nodes.
	# Both suites take 25-35 min under TCG on 2 cores of a slow host; the
	# bound is for a hung guest, not a slow one.
	tests/vm/run-in-vm.sh --build-dir "$build" --mem 4096 --timeout 3000 \
		-- bash -c "$rdma_cmd" ||
		status=1
	echo "rdma suites in the VM: $(($(date +%s) - start)) s wall time"
fi

stage "etcd tests (run beside the RDMA suite)"
wait "$etcd_pid" || status=1
cat "$etcd_out"

# The fuzzers take the CPU the fault bed leaves (SCHED_IDLE: never
# before a runnable task of the bed); their output is shown after it.
if [ -z "${RMP_SKIP_FUZZ:-}" ]; then
	fuzz_out=$fuzz/meson-logs/fuzz-out.txt
	chrt --idle 0 meson test -C "$fuzz" --no-rebuild --print-errorlogs \
		--suite fuzz --logbase fuzz >"$fuzz_out" 2>&1 &
	fuzz_pid=$!
	logs+=("$fuzz/meson-logs/fuzz.json")
fi

stage "two-host fault bed"
start=$(date +%s)
run_suite "$build" twohost twohost
echo "two-host suite: $(($(date +%s) - start)) s wall time"

if [ -z "${RMP_SKIP_FUZZ:-}" ]; then
	stage "fuzz ($RMP_FUZZ_SECONDS s per target, beside the two-host bed)"
	wait "$fuzz_pid" || status=1
	cat "$fuzz_out"
fi

stage "summary"
python3 - "${logs[@]}" <<'PY' || status=1
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print(f"{path}: missing (suite did not run)")
        failed += 1
        continue
    p = f = s = 0
    for line in lines:
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            p += 1
        elif r == "SKIP":
            s += 1
        else:
            f += 1
    print(f"{path}: {p} passed, {f} failed, {s} skipped")
    passed += p; failed += f; skipped += s
print(f"rmpool: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
PY
stage "times"
python3 - "$(($(date +%s) - ci_t0))" "${stages[@]}" -- "${logs[@]}" <<'PY'
import json, os, re, sys
args = sys.argv[1:]
total, sep = int(args[0]), args.index("--")
stages, logs = args[1:sep], args[sep + 1:]
print(f"{'stage':<44} {'s':>6}")
for st in stages:
    name, _, secs = st.partition("\t")
    if secs:
        print(f"{name:<44} {int(secs):>6}")
print(f"{'total (budget 2100 s: tests/README.md)':<44} {total:>6}")
tests = []
for path in logs:
    try:
        for line in open(path):
            r = json.loads(line)
            log = os.path.basename(path)[:-len(".json")]
            # a test of several (tests/twohost/test-pair.sh): each one's
            # TAP line says its time, "ok N - NAME (S s)"
            out = r.get("stdout") or ""
            subs = re.findall(r"^(?:not )?ok \d+ - (\S+) \((\d+) s", out,
                              re.M)
            plan = re.search(r"^1\.\.(\d+)$", out, re.M)
            if not plan or int(plan.group(1)) != len(subs):
                subs = []
            for sub, secs in subs:
                tests.append((float(secs), f'{r["name"]} / {sub}', log))
            if not subs:
                tests.append((r["duration"], r["name"], log))
    except (OSError, ValueError, KeyError):
        pass
print("\nthe ten slowest tests:")
for dur, name, log in sorted(tests, reverse=True)[:10]:
    print(f"{dur:8.1f} s  {name}  ({log})")
PY
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-pytest.sh BUILD_ROOT PYTEST_ARGS... -- Debian's python3 -m pytest with
# the build's rmpool package first on PYTHONPATH. When the extension was
# built with a sanitizer, the interpreter (not sanitized) runs with the
# ASan runtime preloaded, leak checks off (CPython keeps memory to its
# exit on purpose). Exits 77 (skip) without pytest.
set -u
build=$1
shift
pymod=$build/client/python
ext=$(ls "$pymod"/rmpool/_rmpool*.so 2>/dev/null | head -n1)
[ -n "$ext" ] || { echo "no rmpool extension in $pymod (-Dpython=disabled?)" >&2; exit 77; }
/usr/bin/python3 -c 'import pytest' 2>/dev/null ||
	{ echo "python3-pytest is not installed" >&2; exit 77; }
export PYTHONPATH=$pymod${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# Unbuffered: what pytest printed survives a process that dies.
export PYTHONUNBUFFERED=1
asan=$(ldd "$ext" | awk '$1 ~ /^libasan/ { print $3 }')
capture=()
if [ -n "$asan" ]; then
	export LD_PRELOAD=$asan${LD_PRELOAD:+ $LD_PRELOAD}
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	# As the test runner has it (tests/run-tests.sh): undefined
	# behaviour fails the test, whoever runs it.
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
	export RMP_PY_ASAN=1
	# pytest's default capture takes fd 2 during a test: a sanitizer
	# report (written to fd 2, then the process ends) would be lost
	# with it. Capture Python's sys.stdout/stderr only.
	capture=(--capture=sys)
fi
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "${capture[@]}" "$@"

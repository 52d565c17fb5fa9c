# SPDX-License-Identifier: MIT
# pyenv.sh BUILD_ROOT -- sourced: the environment Debian's python3 needs
# to import the build's rmpool package: it first on PYTHONPATH, and when
# the extension was built with a sanitizer, the ASan runtime preloaded
# (the interpreter is not sanitized), leak checks off (CPython keeps
# memory to its exit on purpose) and undefined behaviour fatal. Sets
# RMP_PY_EXT (the extension) and RMP_PY_ASAN (1 when sanitized); returns
# 77 (skip) when there is no extension.
rmp_pymod=$1/client/python
RMP_PY_EXT=$(ls "$rmp_pymod"/rmpool/_rmpool*.so 2>/dev/null | head -n1)
if [ -z "$RMP_PY_EXT" ]; then
	echo "no rmpool extension in $rmp_pymod (-Dpython=disabled?)" >&2
	return 77
fi
export PYTHONPATH=$rmp_pymod${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# Unbuffered: what a script printed survives a process that dies.
export PYTHONUNBUFFERED=1
rmp_asan=$(ldd "$RMP_PY_EXT" | awk '$1 ~ /^libasan/ { print $3 }')
RMP_PY_ASAN=
if [ -n "$rmp_asan" ]; then
	export LD_PRELOAD=$rmp_asan${LD_PRELOAD:+ $LD_PRELOAD}
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	# As the test runner has it (tests/run-tests.sh): undefined
	# behaviour fails the test, whoever runs it.
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
	export RMP_PY_ASAN=1
fi

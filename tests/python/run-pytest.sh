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
# shellcheck source=pyenv.sh
. "$(dirname "$0")/pyenv.sh" "$build" || exit 77
/usr/bin/python3 -c 'import pytest' 2>/dev/null ||
	{ echo "python3-pytest is not installed" >&2; exit 77; }
capture=()
if [ -n "$RMP_PY_ASAN" ]; then
	# pytest's default capture takes fd 2 during a test: a sanitizer
	# report (written to fd 2, then the process ends) would be lost
	# with it. Capture Python's sys.stdout/stderr only.
	capture=(--capture=sys)
fi
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "${capture[@]}" "$@"

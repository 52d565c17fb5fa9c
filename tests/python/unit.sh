#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# unit.sh BUILD_ROOT -- the Python module rmpool without a device (test_unit.py): it imports from the build, every exception class is an OSError of its errno (and of the builtin class it stands for), wrong arguments raise TypeError or ValueError, an unreachable server a clear rmpool.Error, every method has a docstring and the stubs name every public name.
exec "$(dirname "$0")/run-pytest.sh" "$1" "$(dirname "$0")/test_unit.py"

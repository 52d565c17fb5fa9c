#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wheel.sh SOURCE_ROOT VERSION -- the wheel pyproject.toml makes (meson-python, offline, from a copy of the source) is self-contained: named VERSION and cp311-abi3, it holds the package's files and rmpool/_rmpool.abi3.so and nothing else, the extension needs no librmpool, exports only PyInit__rmpool and takes only symbols of the limited API of 3.11, and installed with pip into a fresh venv it imports and raises a clear rmpool.Error for a server it cannot reach.
#
# Debian's /usr/bin/python3 with python3-mesonpy, python3-pip and
# python3-venv (tests/setup.sh installs them; without them: a TAP skip).
# No network: pip wheel --no-build-isolation --no-index, pip install
# --no-index. The copy keeps meson-python's files (.mesonpy-*) out of the
# source tree. Prints TAP.
set -u

src=$1
version=$2
py=/usr/bin/python3
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
# check NAME CMD...: one TAP line, CMD's output as comments when it fails.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		printf '%s\n' "$out" | sed 's/^/# /'
		not_ok "$name"
	fi
}
done_tap() {
	echo "1..$n"
	[ $failed -eq 0 ]
	exit
}

for m in mesonpy pip venv; do
	$py -c "import $m" 2>/dev/null || {
		echo "1..0 # SKIP $py has no module $m (tests/setup.sh installs it)"
		exit 0
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmp-wheel-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The source without .git, meson-python's leftovers, build directories
# (they hold meson-private) and venvs (pyvenv.cfg).
mkdir "$tmp/src"
for e in "$src"/* "$src"/.[!.]*; do
	[ -e "$e" ] || continue
	case ${e##*/} in .git | .mesonpy*) continue ;; esac
	[ -e "$e/meson-private" ] || [ -e "$e/pyvenv.cfg" ] && continue
	cp -a "$e" "$tmp/src/" || exit 1
done

# pip --isolated: no pip.conf or PIP_* (a find-links, an index) of the host.
pip=("$py" -m pip --isolated --disable-pip-version-check)
if "${pip[@]}" wheel --no-build-isolation --no-deps --no-index \
	--no-cache-dir -w "$tmp/out" "$tmp/src" >"$tmp/build.log" 2>&1; then
	ok "pip wheel builds the wheel"
else
	tail -n 40 "$tmp/build.log" | sed 's/^/# /'
	not_ok "pip wheel builds the wheel"
	done_tap
fi

whl=$(ls "$tmp"/out/*.whl)
name=${whl##*/}
case $name in
rmpool-"$version"-cp3*-abi3-linux_*.whl) ok "named for $version and the stable ABI: $name" ;;
*) not_ok "named for $version and the stable ABI: $name" ;;
esac

# What the wheel holds: the package's files as in the source, the
# extension, the dist-info's three files; nothing else (no librmpool).
expected=$( (
	cd "$src/client/python/rmpool" &&
	for f in *.py *.pyi py.typed; do echo "rmpool/$f"; done
	echo rmpool/_rmpool.abi3.so
	for f in METADATA WHEEL RECORD; do echo "rmpool-$version.dist-info/$f"; done
) | sort)
held=$($py -c 'import sys, zipfile
print("\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))' "$whl")
if [ "$held" = "$expected" ]; then
	ok "the wheel holds the package and nothing else: $(echo "$held" | tr '\n' ' ')"
else
	diff <(echo "$expected") <(echo "$held") | sed 's/^/# /'
	not_ok "the wheel holds the package and nothing else"
fi

mkdir "$tmp/x"
$py -m zipfile -e "$whl" "$tmp/x"
ext=$tmp/x/rmpool/_rmpool.abi3.so
dyn=$(readelf -d "$ext" 2>&1)
if [ -f "$ext" ] && ! grep -q 'NEEDED.*librmpool' <<<"$dyn" &&
   ! grep -q 'RPATH\|RUNPATH' <<<"$dyn"; then
	ok "the extension needs no librmpool and no rpath:" \
		"$(sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' <<<"$dyn" | tr '\n' ' ')"
else
	grep 'NEEDED\|PATH' <<<"$dyn" | sed 's/^/# /'
	not_ok "the extension needs no librmpool and no rpath"
fi
exported=$(nm -D --defined-only "$ext" 2>&1 | awk '{ print $NF }')
if [ "$exported" = PyInit__rmpool ]; then
	ok "the extension exports PyInit__rmpool alone"
else
	echo "$exported" | head -n 20 | sed 's/^/# /'
	not_ok "the extension exports PyInit__rmpool alone ($(echo "$exported" | wc -l) symbols)"
fi
# The stable ABI the tag promises: each Python symbol the extension takes
# is declared by Python's headers under Py_LIMITED_API 3.11 (as the
# extension includes them: PY_SSIZE_T_CLEAN renames PyArg_Parse*).
pyinc=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
limited=$(printf '%s\n' '#define PY_SSIZE_T_CLEAN' \
	'#define Py_LIMITED_API 0x030B0000' '#include <Python.h>' \
	'#include <pythread.h>' '#include <structmember.h>' |
	${CC:-cc} -E -P -I"$pyinc" -x c - | grep -oE '\b_?Py[A-Za-z0-9_]*\b' |
	sort -u)
taken=$(nm -D --undefined-only "$ext" | awk '{ sub(/@.*/, "", $NF); print $NF }' |
	grep -E '^_?Py' | sort -u)
beyond=$(comm -23 <(echo "$taken") <(echo "$limited"))
if [ -n "$limited" ] && [ -n "$taken" ] && [ -z "$beyond" ]; then
	ok "the extension takes $(echo "$taken" | wc -l) Python symbols, all of the limited API of 3.11"
else
	echo "beyond the limited API: $beyond" | sed 's/^/# /'
	not_ok "the extension takes Python symbols of the limited API of 3.11 only"
fi

# A fresh venv (no system site-packages: no other rmpool), pip installs.
check "a fresh venv" $py -m venv --without-pip "$tmp/venv"
check "pip install --no-index the wheel into it" \
	"${pip[@]}" --python "$tmp/venv/bin/python" install --no-index \
	--no-deps --no-cache-dir "$whl"

# Run in $tmp, without the caller's PYTHONPATH or LD_LIBRARY_PATH: the
# module can come from the venv only, its libraries from the system only.
# shellcheck disable=SC2317 # called through check
vpy() {
	(cd "$tmp" && env -u PYTHONPATH -u LD_LIBRARY_PATH PYTHONNOUSERSITE=1 \
		"$tmp/venv/bin/python" -c "$@")
}
check "import rmpool from the venv, version $version" vpy '
import os, sys, rmpool
d = os.path.dirname(rmpool._rmpool.__file__)
assert rmpool._rmpool.__file__.startswith(sys.prefix + "/"), rmpool._rmpool.__file__
assert os.path.dirname(rmpool.__file__) == d, rmpool.__file__
assert rmpool.__version__ == rmpool.version() == sys.argv[1], rmpool.__version__
for f in ("__init__.pyi", "py.typed"):
    assert os.path.exists(os.path.join(d, f)), f
import rmpool._aio
' "$version"
check "an unreachable server: an rmpool.Error with the library's text" vpy '
import errno, rmpool
try:
    rmpool.Client("192.0.2.1", 7471, tenant=None, timeout=2)
    raise SystemExit("connected to 192.0.2.1")
except rmpool.Error as e:
    assert isinstance(e, OSError) and e.errno in (
        errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT,
        errno.ENODEV, errno.ECONNREFUSED), e
    assert e.strerror and rmpool.strerror(e.errno) in e.strerror, e
    assert type(e) is type(rmpool.exception_for(-e.errno)), e
    print(type(e).__name__, e)
'
done_tap

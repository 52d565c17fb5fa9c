#!/bin/sh
# SPDX-License-Identifier: MIT
# check-install.sh -- what `meson install` puts on a machine. Prints TAP.
#
#   check-install.sh BUILD_DIR
#
# Installs BUILD_DIR into a scratch DESTDIR (meson install --destdir
# --no-rebuild) and checks that
#  - the programs, the library, its header and rmpool.pc, the shipped
#    rmpoold.conf, the systemd unit with its sysusers.d and tmpfiles.d
#    snippets, and the five manual pages are there;
#  - the installed unit's ExecStart/ExecReload name the installed rmpoold
#    and configuration file (as meson's sbindir and sysconfdir put them);
#  - each installed page renders with man -l;
#  - a program builds and links against the installed header and library
#    through pkg-config (sysroot = DESTDIR).
set -u

build=$1
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

dest=$(mktemp -d "${TMPDIR:-/tmp}/rmp-install-XXXXXX") || exit 1
trap 'rm -rf "$dest"' EXIT

if meson install -C "$build" --destdir "$dest" --no-rebuild --quiet \
	>"$dest.log" 2>&1; then
	ok "meson install --destdir"
else
	sed 's/^/# /' "$dest.log"
	not_ok "meson install --destdir"
fi
rm -f "$dest.log"

# one NAME GLOB -- exactly one installed file matches GLOB (under $dest).
one() {
	set -- "$1" $(find "$dest" -path "$dest$2" \( -type f -o -type l \) | sort)
	if [ $# -eq 2 ]; then
		ok "installed: $1 (${2#"$dest"})"
	else
		not_ok "installed: $1: $(($# - 1)) files match"
	fi
}
one rmpoold '*/sbin/rmpoold'
one rmpoolctl '*/sbin/rmpoolctl'
one rmpool '*/bin/rmpool'
one rmpool-bench '*/bin/rmpool-bench'
one librmpool '*/lib*/librmpool.so.[0-9]*.[0-9]*.[0-9]*'
one rmpool.h '*/include/rmpool.h'
one rmpool.pc '*/pkgconfig/rmpool.pc'
one rmpoold.conf '*/etc/rmpool/rmpoold.conf'
one rmpoold.service '*/systemd/system/rmpoold.service'
one sysusers.d '*/sysusers.d/rmpool.conf'
one tmpfiles.d '*/tmpfiles.d/rmpool.conf'
for page in man8/rmpoold.8 man5/rmpoold.conf.5 man1/rmpool.1 \
	man3/librmpool.3 man8/rmpoolctl.8 man1/rmpool-bench.1; do
	one "$page" "*/share/man/$page"
done

# The unit runs what was installed, with the installed configuration.
unit=$(find "$dest" -path '*/systemd/system/rmpoold.service' | head -n 1)
bad=
for line in $(grep -E '^Exec(Start|Reload)=' "${unit:-/dev/null}" | tr ' ' '\n' |
	      grep -E '^/.*/(rmpoold|rmpoold\.conf)$'); do
	[ -e "$dest$line" ] || bad="$bad $line"
done
if [ -n "$unit" ] && [ -z "$bad" ] &&
   grep -q "^ExecStart=.*/rmpoold -c /.*/rmpoold.conf" "$unit"; then
	ok "the unit's ExecStart and ExecReload name the installed files"
else
	not_ok "the unit names files that were not installed:$bad"
fi

# The installed pages render.
for page in $(find "$dest" -path '*/share/man/man*/*' -type f | sort); do
	if LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" \
		>"$dest/out" 2>"$dest/err" && [ ! -s "$dest/err" ] &&
	   grep -q '^NAME' "$dest/out"; then
		ok "man -l ${page#"$dest"}"
	else
		sed 's/^/# /' "$dest/err"
		not_ok "man -l ${page#"$dest"}"
	fi
done

# A program builds against the installed library, through pkg-config.
pcdir=$(dirname "$(find "$dest" -name rmpool.pc | head -n 1)")
cat >"$dest/prog.c" <<'EOF'
#include <rmpool.h>
int main(void)
{
	struct rmp_client_opts o;

	rmp_client_opts_init(&o);
	return o.size == sizeof(o) ? 0 : 1;
}
EOF
flags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$dest \
	pkg-config --cflags --libs rmpool 2>&1)
libdir=$(dirname "$(find "$dest" -name 'librmpool.so' | head -n 1)")
# shellcheck disable=SC2086 # flags are words
if ${CC:-cc} -o "$dest/prog" "$dest/prog.c" $flags 2>"$dest/err" &&
   LD_LIBRARY_PATH=$libdir "$dest/prog"; then
	ok "a program builds with pkg-config rmpool and runs ($flags)"
else
	sed 's/^/# /' "$dest/err"
	not_ok "a program builds with pkg-config rmpool and runs ($flags)"
fi

# The Python package (when the build has it): where Debian's python3
# looks for the prefix's packages, and importable from there.
if ls "$build"/client/python/rmpool/_rmpool*.so >/dev/null 2>&1; then
	one "python module" '*/rmpool/_rmpool*.so'
	ext=$(find "$dest" -path '*/rmpool/_rmpool*.so' | head -n 1)
	site=$(dirname "$(dirname "$ext")")
	if [ -n "$ext" ] && /usr/bin/python3 -c 'import sys
sys.exit(sys.argv[1] not in sys.path)' "${site#"$dest"}"; then
		ok "python: ${site#"$dest"} is on python3's path"
	else
		not_ok "python: ${site#"$dest"} is not on python3's path"
	fi
	# The status is python's (a pipe into sed would give sed's).
	out="no extension module installed"
	if [ -n "$ext" ] && out=$(PYTHONPATH=$site LD_LIBRARY_PATH=$libdir \
		/usr/bin/python3 -c 'import rmpool, sys
assert rmpool._rmpool.__file__.startswith(sys.argv[1]), rmpool.__file__
rmpool.version()' "$site" 2>&1); then
		ok "python: import rmpool from the installed package"
	else
		printf '%s\n' "$out" | sed 's/^/# /'
		not_ok "python: import rmpool from the installed package"
	fi
fi
echo "1..$n"
[ $failed -eq 0 ]

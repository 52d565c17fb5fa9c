#!/bin/sh
# SPDX-License-Identifier: MIT
# check-man.sh -- the manual pages against the code they describe. Prints
# TAP.
#
#   check-man.sh SOURCE_ROOT [BUILT_PAGE...]
#
#  - every built page renders with man -l, without warnings;
#  - librmpool(3) names every function client/include/rmpool.h declares
#    (and each of them is exported by client/librmpool.map);
#  - rmpoold.conf(5) has an entry for every key of daemon/config.c, in
#    its section, each saying "Applied by a reload" or "Needs a restart",
#    and "Needs a restart" exactly for the keys daemon/ops.c keeps on a
#    reload (when ops.c has that table);
#  - rmpool(1) names every command, option and environment variable of
#    client/cli.c and cli_cmd.c; rmpoolctl(8) those of daemon/rmpoolctl.c;
#    rmpoold(8) every option of daemon/main.c;
#  - the SEE ALSO of each page names every other page.
set -u

src=$1
shift
man=$src/docs/man

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - # SKIP $*"; }
# check WHAT MISSING -- ok when MISSING (a list) is empty.
check() {
	if [ -z "$2" ]; then
		ok "$1"
	else
		not_ok "$1: missing:" $2
	fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmp-man-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Rendering.
if [ $# -eq 0 ]; then
	skip "rendering: no pages built (scdoc not found, or -Dman=disabled)"
fi
for page in "$@"; do
	if LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" \
		>"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] &&
	   grep -q '^NAME' "$tmp/out"; then
		ok "man -l $(basename "$page") renders ($(wc -l <"$tmp/out") lines)"
	else
		sed 's/^/# /' "$tmp/err"
		not_ok "man -l $(basename "$page") renders without warnings"
	fi
done

# librmpool(3) and rmpool.h.
header=$src/client/include/rmpool.h
funcs=$(sed -n 's/^[a-z][^(]*[ *]\(rmp_[a-z0-9_]*\)(.*/\1/p' "$header" | sort -u)
missing=
for f in $funcs; do
	grep -q "$f(" "$man/librmpool.3.scd" || missing="$missing $f"
done
check "librmpool(3) has all $(echo $funcs | wc -w) functions of rmpool.h" "$missing"
missing=
for f in $funcs; do
	grep -q "^[[:space:]]*$f;" "$src/client/librmpool.map" || missing="$missing $f"
done
check "librmpool.map exports every function of rmpool.h" "$missing"
# Every constant (a #define or an enum value), type and error code the
# header names is named in the page too: the header cannot grow alone.
missing=
for c in $(sed -n 's/^#define \(RMP_[A-Z0-9_]*\).*/\1/p; s/^[[:space:]]*\(RMP_[A-Z0-9_]*\) *=.*/\1/p' "$header" | sort -u); do
	grep -q "$c" "$man/librmpool.3.scd" || missing="$missing $c"
done
check "librmpool(3) names every constant of rmpool.h" "$missing"
missing=
for t in $(grep -oE '(struct|enum) rmp_[a-z0-9_]+' "$header" | sed 's/.* //' | sort -u); do
	grep -q "$t" "$man/librmpool.3.scd" || missing="$missing $t"
done
check "librmpool(3) names every type of rmpool.h" "$missing"
missing=
for e in $(grep -oE -- '-E[A-Z0-9]+' "$header" | tr -d - | sort -u); do
	grep -q -- "-$e\*" "$man/librmpool.3.scd" || missing="$missing -$e"
done
check "librmpool(3) names every error code of rmpool.h" "$missing"

# rmpoold.conf(5) and config.c: one entry per key, "section.key reload"
# or "section.key restart" (tenant keys as tenant.KEY).
awk '
function flush() {
	if (key == "")
		return
	gsub(/[ \t]+/, " ", text)
	how = "unsaid"
	if (text ~ /Applied by a reload/)
		how = "reload"
	else if (text ~ /Needs a restart/)
		how = "restart"
	print sec "." key, how
	key = ""
}
/^# \[/ {
	flush()
	sec = $2
	gsub(/[][]/, "", sec)
	sub(/^tenant\..*/, "tenant", sec)
	next
}
/^# / { flush(); sec = ""; next }
/^\*[a-z_]+\* =/ && sec != "" {
	flush()
	key = $1
	gsub(/\*/, "", key)
	text = ""
	next
}
{ text = text " " $0 }
END { flush() }
' "$man/rmpoold.conf.5.scd" | sort >"$tmp/documented"
{
	grep -o 'KEY("[a-z]*", "[a-z_]*"' "$src/daemon/config.c" |
		sed 's/KEY("\([a-z]*\)", "\([a-z_]*\)"/\1.\2/'
	grep -o 'TKEY("[a-z_]*"' "$src/daemon/config.c" |
		sed 's/TKEY("\([a-z_]*\)"/tenant.\1/'
} | sort -u >"$tmp/keys"
missing=$(cut -d' ' -f1 "$tmp/documented" | comm -23 "$tmp/keys" -)
check "rmpoold.conf(5) documents all $(wc -l <"$tmp/keys") keys of config.c" "$missing"
extra=$(cut -d' ' -f1 "$tmp/documented" | comm -13 "$tmp/keys" -)
check "rmpoold.conf(5) documents no key config.c lacks" "$extra"
unsaid=$(awk '$2 == "unsaid" { print $1 }' "$tmp/documented")
check "rmpoold.conf(5) says for every key whether a reload applies it" "$unsaid"
missing=
for k in $(sed -n 's/^#\{0,1\}\([a-z_]*\) *=.*/\1/p' "$src/conf/rmpoold.conf" | sort -u); do
	grep -q "^\*$k\* =" "$man/rmpoold.conf.5.scd" || missing="$missing $k"
done
check "rmpoold.conf(5) documents every key of conf/rmpoold.conf" "$missing"
if grep -q 'KEEP("' "$src/daemon/ops.c" 2>/dev/null; then
	grep -o 'KEEP("[a-z_.]*"' "$src/daemon/ops.c" |
		sed 's/KEEP("\(.*\)"/\1/' | sort -u >"$tmp/restart"
	wrong=$(awk 'NR == FNR { r[$1] = 1; next }
		     ($1 in r) != ($2 == "restart") { print $1 "(" $2 ")" }' \
		"$tmp/restart" "$tmp/documented")
	check "rmpoold.conf(5): 'Needs a restart' exactly for the keys a reload keeps (daemon/ops.c)" "$wrong"
else
	skip "reload table: daemon/ops.c has none"
fi

# rmpool(1) and cli.c, cli_cmd.c.
cli="$src/client/cli.c $src/client/cli_cmd.c"
missing=
for c in $(cat $cli | grep -o '{ "[a-z]*", cmd_' | sed 's/{ "\([a-z]*\)".*/\1/'); do
	grep -q "^\*$c\*" "$man/rmpool.1.scd" || missing="$missing $c"
done
for o in $(cat $cli | grep -o '"--[a-z][a-z-]*"' | tr -d '"' | sort -u); do
	grep -q -- "\*$o\*" "$man/rmpool.1.scd" || missing="$missing $o"
done
for e in $(cat $cli | grep -o 'RMPOOL_[A-Z_]*' | sort -u); do
	grep -q "$e" "$man/rmpool.1.scd" || missing="$missing $e"
done
check "rmpool(1) has every command, option and variable of cli.c and cli_cmd.c" "$missing"

# rmpoold(8) and main.c.
missing=
for o in $(grep -o '{ "[a-z-]*", [a-z_]*_argument' "$src/daemon/main.c" |
	   sed 's/{ "\([a-z-]*\)".*/\1/'); do
	grep -q -- "\*--$o\*" "$man/rmpoold.8.scd" || missing="$missing --$o"
done
check "rmpoold(8) has every option of main.c" "$missing"

# rmpoolctl(8) and rmpoolctl.c.
ctl=$src/daemon/rmpoolctl.c
missing=
for c in $(sed -n '/^} commands\[\] = {/,/^};/p;/^static const struct {/,/^} commands/p' "$ctl" |
	   grep -o '{ "[a-z]*", [0-9]' | sed 's/{ "\([a-z]*\)".*/\1/' | sort -u); do
	grep -q "^\*$c\*" "$man/rmpoolctl.8.scd" || missing="$missing $c"
done
for o in $(grep -o '{ "[a-z-]*", [a-z_]*_argument' "$ctl" |
	   sed 's/{ "\([a-z-]*\)".*/\1/'); do
	grep -q -- "\*--$o\*" "$man/rmpoolctl.8.scd" || missing="$missing --$o"
done
for e in $(grep -o 'RMPOOL_[A-Z_]*' "$ctl" | sort -u); do
	grep -q "$e" "$man/rmpoolctl.8.scd" || missing="$missing $e"
done
ncmd=$(grep -c '{ "[a-z]*", [0-9]' "$ctl")
[ "$ncmd" -gt 0 ] || missing="$missing (no command table found in rmpoolctl.c)"
check "rmpoolctl(8) has every command, option and variable of rmpoolctl.c" "$missing"

# SEE ALSO: each page names the others.
pages=$(cd "$man" && ls *.scd | sed 's/\.scd$//')
for p in $pages; do
	sed -n '/^# SEE ALSO/,$p' "$man/$p.scd" >"$tmp/see"
	missing=
	for q in $pages; do
		[ "$q" = "$p" ] && continue
		ref="*${q%.*}*(${q##*.})"
		grep -qF "$ref" "$tmp/see" || missing="$missing $ref"
	done
	check "SEE ALSO of $p names the other pages" "$missing"
done

echo "1..$n"
[ $failed -eq 0 ]

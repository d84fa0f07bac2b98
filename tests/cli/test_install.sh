#!/usr/bin/env bash
# test_install.sh - `make install` into a temporary DESTDIR (PREFIX=/usr), then use the installed
# library the way a user's project does: only through pkg-config mlfabric. Checks: the files are
# where docs/api.md says, libmlfabric.so has SONAME libmlfabric.so.2 (the first number of the
# Makefile's MLFABRIC_VERSION; docs/api.md "Changes in 2.0") and exports only mlf_*, the
# installed headers compile alone (-std=c11 -Wall -Wextra -Werror -pedantic), mlfabric.pc's
# version is the library's, the out-of-tree example examples/c builds with pkg-config, links
# the installed .so, answers --help, and without a dataplane exits 1 with one error line naming
# the socket; `make uninstall` removes every file it installed.
# Run from the repository root (make does), after `make`. Needs no root and no network.
set -u
MAKE=${MAKE:-make}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dest=$tmp/dest

for tool in pkg-config readelf nm; do
	command -v $tool >/dev/null || { echo "FAIL: $tool not installed"; exit 1; }
done
if ! $MAKE --no-print-directory install DESTDIR="$dest" PREFIX=/usr >"$tmp/install.log" 2>&1; then
	tail -5 "$tmp/install.log"
	echo "FAIL: make install DESTDIR=$dest PREFIX=/usr"
	exit 1
fi
grep -q 'ldconfig' "$tmp/install.log" && fail "make install ran ldconfig although DESTDIR was set"

# the files
for f in include/mlfabric/mlfabric.h include/mlfabric/mlfabric_sync.h include/mlfabric/mlfabric_verify.h \
	 lib/pkgconfig/mlfabric.pc bin/mlf-dataplane bin/mlf-scheduler bin/mlf-ps bin/mlf-worker bin/mlf-testbed; do
	[ -f "$dest/usr/$f" ] || fail "make install did not install /usr/$f"
done
[ -e "$dest/usr/include/mlfabric/mlf_payload.h" ] && fail "make install installed the protocol header mlf_payload.h (mlfabric.h is self-contained)"
for f in bin/mlf-txloop bin/fabric_app bin/test_fabric; do
	[ -e "$dest/usr/$f" ] && fail "make install installed the test/bench program /usr/$f"
done
version=$(sed -n 's/^MLFABRIC_VERSION *:= *//p' Makefile)
major=${version%%.*}
[ "$major" = 2 ] || fail "MLFABRIC_VERSION $version: the 2.0 API (docs/api.md \"Changes in 2.0\") is major 2"
soname=libmlfabric.so.$major
real=$(cd "$dest/usr/lib" && ls libmlfabric.so.*.*.* 2>/dev/null)
[ "$real" = "libmlfabric.so.$version" ] && [ -f "$dest/usr/lib/$real" ] ||
	fail "no libmlfabric.so.$version in /usr/lib (found: ${real:-none})"
[ "$(readlink "$dest/usr/lib/$soname")" = "$real" ] || fail "$soname does not point to $real"
[ "$(readlink "$dest/usr/lib/libmlfabric.so")" = "$soname" ] || fail "libmlfabric.so does not point to $soname"

# the library: soname, exported symbols (only mlf_*, and every function the headers declare)
so=$dest/usr/lib/$soname
readelf -d "$so" | grep -F SONAME | grep -qF "[$soname]" || fail "SONAME is not $soname: $(readelf -d "$so" | grep SONAME)"
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/exported"
[ -s "$tmp/exported" ] || fail "libmlfabric.so exports nothing"
bad=$(grep -v '^mlf_' "$tmp/exported" | head -5 | tr '\n' ' ')
[ -z "$bad" ] || fail "libmlfabric.so exports symbols other than mlf_*: $bad"
# (functions declared at the start of a line; static inline ones are not the library's)
grep -hE '^[a-z].*\bmlf_[a-z0-9_]+\(' "$dest"/usr/include/mlfabric/*.h | grep -v '^static' |
	grep -oE '\bmlf_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$tmp/declared"
[ "$(wc -l <"$tmp/declared")" -ge 15 ] || fail "found only $(wc -l <"$tmp/declared") mlf_* functions in the headers"
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
[ -z "$missing" ] || fail "declared in the headers but not exported: $missing"

# the headers, alone
for h in mlfabric.h mlfabric_sync.h mlfabric_verify.h; do
	printf '#include <mlfabric/%s>\nint main(void) { return 0; }\n' "$h" >"$tmp/h.c"
	cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$dest/usr/include" -c "$tmp/h.c" -o "$tmp/h.o" \
		2>"$tmp/h.err" || fail "installed $h does not compile alone: $(head -3 "$tmp/h.err")"
done

# pkg-config against the DESTDIR tree (what a user's Makefile does after a real install)
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
ver=$(pkg-config --modversion mlfabric 2>"$tmp/pc.err") || fail "pkg-config mlfabric: $(cat "$tmp/pc.err")"
[ "libmlfabric.so.$ver" = "$real" ] || fail "mlfabric.pc version $ver does not match $real"
flags=$(pkg-config --cflags --libs mlfabric)
[[ " $flags " == *" -I$dest/usr/include "* && " $flags " == *" -lmlfabric "* ]] ||
	fail "pkg-config --cflags --libs mlfabric: '$flags'"

# the out-of-tree example, built by its own Makefile
cp -r examples/c "$tmp/example"
if ! $MAKE --no-print-directory -C "$tmp/example" CFLAGS="-O2 -Werror" >"$tmp/ex.log" 2>&1; then
	fail "examples/c does not build with pkg-config: $(tail -3 "$tmp/ex.log")"
else
	ex=$tmp/example/push_get
	export LD_LIBRARY_PATH=$dest/usr/lib
	readelf -d "$ex" | grep -F NEEDED | grep -qF "[$soname]" || fail "push_get does not link $soname"
	ldd "$ex" | grep -qF "$soname => $dest/usr/lib/" || fail "push_get does not load the installed library: $(ldd "$ex" | grep mlf)"
	"$ex" --help | grep -q -- '--server' || fail "push_get --help does not describe --server"
	"$ex" --host w0 >/dev/null 2>&1
	[ $? = 2 ] || fail "push_get without --cluster/--server: exit status not 2"
	sock=$tmp/no-dataplane.sock
	"$ex" --cluster conf/cluster-pair.json --host a --server b --sock "$sock" --timeout 2 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 1 ] || fail "push_get without a dataplane: exit $rc, want 1"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "push_get without a dataplane: $(wc -l <"$tmp/err") stderr lines, want 1"
	grep -qF "$sock" "$tmp/err" || fail "push_get's error does not name the socket: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "push_get printed a result without a dataplane: $(cat "$tmp/out")"
	unset LD_LIBRARY_PATH
fi
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# uninstall removes every file of the headers, library, pc file and programs (other fragments'
# INSTALL_HOOKS files, e.g. the Python package, are their UNINSTALL_HOOKS' business)
$MAKE --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr >"$tmp/uninstall.log" 2>&1 ||
	fail "make uninstall: $(tail -3 "$tmp/uninstall.log")"
left=$(find "$dest/usr/bin" "$dest/usr/include" "$dest"/usr/lib/libmlfabric* "$dest/usr/lib/pkgconfig" ! -type d 2>/dev/null |
	head -5 | tr '\n' ' ')
[ -z "$left" ] || fail "make uninstall left files behind: $left"

[ $fails = 0 ] || { echo "test_install: $fails failure(s)"; exit 1; }
echo "ok   test_install: make install DESTDIR, pkg-config, SONAME, mlf_* exports, headers, example, uninstall"

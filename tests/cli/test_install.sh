#!/usr/bin/env bash
# test_install.sh - `make install` as a packager and as a user do it, then use the installed
# library the way a user's project does: only through pkg-config mlfabric (docs/api.md "Linking").
# 1. DESTDIR (PREFIX=/usr): the files are where docs/api.md says, libmlfabric.so has SONAME
#    libmlfabric.so.2 (the first number of the Makefile's MLFABRIC_VERSION; docs/api.md "Changes
#    in 2.0") and exports only mlf_*, the installed headers compile alone as C99, C11 (gcc) and
#    C++17 (g++), -pedantic -Werror; mlfabric.pc's version is the library's and its Libs carry no
#    rpath (/usr/lib is the loader's); the C example examples/c builds with pkg-config, links the
#    installed .so (LD_LIBRARY_PATH: a DESTDIR tree is a staging area), answers --help, and
#    without a dataplane exits 1 with one error line naming the socket; `make uninstall` leaves
#    nothing in DESTDIR, no file and no directory.
# 2. PREFIX=a temporary directory, no DESTDIR: mlfabric.pc's Libs carry the rpath of its lib, so
#    the C++ example examples/c/get_push.cpp (g++ -std=c++17, pkg-config) runs without LD_LIBRARY_PATH and
#    without a dataplane fails naming the socket; the installed tools answer (mlf-keygen writes a
#    key, mlf-cluster --help, mlf-fault list reads the installed conf/, mlf-top --help), the
#    installed Python package imports; `make uninstall` removes the prefix it created.
# Run from the repository root (make does), after `make`. Needs no root and no network.
set -u
MAKE=${MAKE:-make}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dest=$tmp/dest

for tool in pkg-config readelf nm g++; do
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
	 lib/pkgconfig/mlfabric.pc bin/mlf-dataplane bin/mlf-scheduler bin/mlf-ps bin/mlf-worker bin/mlf-testbed \
	 bin/mlf-keygen bin/mlf-cluster bin/mlf-fault bin/mlf-top share/mlfabric/tools/mlfcluster/cli.py \
	 share/mlfabric/tools/mlffault/cli.py share/mlfabric/conf/exp-default.json; do
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

# the headers, alone, as C99, C11 and C++17
for h in mlfabric.h mlfabric_sync.h mlfabric_verify.h; do
	printf '#include <mlfabric/%s>\nint main(void) { return 0; }\n' "$h" >"$tmp/h.c"
	cp "$tmp/h.c" "$tmp/h.cpp"
	for cc in "cc -std=c99" "cc -std=c11" "g++ -std=c++17"; do
		src=$tmp/h.c
		[ "${cc%% *}" = g++ ] && src=$tmp/h.cpp
		$cc -Wall -Wextra -Werror -pedantic -I"$dest/usr/include" -c "$src" -o "$tmp/h.o" \
			2>"$tmp/h.err" || fail "installed $h does not compile alone with $cc: $(head -3 "$tmp/h.err")"
	done
done

# pkg-config against the DESTDIR tree (what a user's Makefile does after a real install)
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
ver=$(pkg-config --modversion mlfabric 2>"$tmp/pc.err") || fail "pkg-config mlfabric: $(cat "$tmp/pc.err")"
[ "libmlfabric.so.$ver" = "$real" ] || fail "mlfabric.pc version $ver does not match $real"
flags=$(pkg-config --cflags --libs mlfabric)
[[ " $flags " == *" -I$dest/usr/include "* && " $flags " == *" -lmlfabric "* ]] ||
	fail "pkg-config --cflags --libs mlfabric: '$flags'"
[[ "$flags" == *rpath* ]] && fail "mlfabric.pc for PREFIX=/usr carries an rpath: '$flags'"

# the out-of-tree example, built by its own Makefile
cp -r examples/c "$tmp/example"
if ! $MAKE --no-print-directory -C "$tmp/example" CFLAGS="-O2 -Werror" push_get >"$tmp/ex.log" 2>&1; then
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

# uninstall removes every file and directory install made (here all of DESTDIR's content)
$MAKE --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr >"$tmp/uninstall.log" 2>&1 ||
	fail "make uninstall: $(tail -3 "$tmp/uninstall.log")"
left=$(cd "$dest" && find . -mindepth 1 | head -5 | tr '\n' ' ')
[ -z "$left" ] || fail "make uninstall DESTDIR left behind: $left"

# 2. a user's own prefix: the rpath, the C++ example, the tools, the Python package
prefix=$tmp/prefix
if ! $MAKE --no-print-directory install PREFIX="$prefix" >"$tmp/install2.log" 2>&1; then
	tail -5 "$tmp/install2.log"
	echo "FAIL: make install PREFIX=$prefix"
	exit 1
fi
grep -q 'ldconfig' "$tmp/install2.log" && fail "make install ran ldconfig for PREFIX=$prefix (its lib has an rpath)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs mlfabric)
[[ " $flags " == *" -I$prefix/include "* && " $flags " == *" -Wl,-rpath,$prefix/lib "* ]] ||
	fail "pkg-config --cflags --libs mlfabric for PREFIX=$prefix: '$flags' (want -I$prefix/include, -Wl,-rpath,$prefix/lib)"
cp -r examples/c "$tmp/example-cpp"
if ! $MAKE --no-print-directory -C "$tmp/example-cpp" CXXFLAGS="-O2 -Werror" get_push >"$tmp/excpp.log" 2>&1; then
	fail "examples/c/get_push.cpp does not build with g++ and pkg-config: $(tail -3 "$tmp/excpp.log")"
else
	ex=$tmp/example-cpp/get_push
	unset LD_LIBRARY_PATH
	ldd "$ex" | grep -qF "$soname => $prefix/lib/" || fail "get_push does not find $prefix/lib/$soname: $(ldd "$ex" | grep mlf)"
	"$ex" --help | grep -q -- '--server' || fail "get_push --help does not describe --server"
	sock=$tmp/no-dataplane.sock
	"$ex" --cluster conf/cluster-pair.json --host a --server b --sock "$sock" --timeout 2 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 1 ] || fail "get_push without a dataplane: exit $rc, want 1"
	[ "$(wc -l <"$tmp/err")" = 1 ] && grep -qF "$sock" "$tmp/err" ||
		fail "get_push without a dataplane: want one error line naming the socket: $(cat "$tmp/err")"
fi
unset PKG_CONFIG_PATH
"$prefix/bin/mlf-keygen" "$tmp/k.key" >/dev/null 2>"$tmp/kg.err" && [ "$(stat -c %s "$tmp/k.key" 2>/dev/null)" = 32 ] ||
	fail "installed mlf-keygen did not write a 32-byte key: $(cat "$tmp/kg.err")"
(cd "$tmp" && "$prefix/bin/mlf-cluster" --help) 2>&1 | grep -q 'run EXPERIMENT' || fail "installed mlf-cluster --help"
(cd "$tmp" && "$prefix/bin/mlf-fault" list) 2>&1 | grep -q '^cut-link' || fail "installed mlf-fault list does not list the installed scenarios"
(cd "$tmp" && "$prefix/bin/mlf-top" --help) 2>&1 | grep -q -- '--cluster' || fail "installed mlf-top --help"
pyver=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_python_version())')
(cd "$tmp" && PYTHONPATH=$prefix/lib/python$pyver/dist-packages /usr/bin/python3 -c 'import mlfabric; print(mlfabric.__version__)' \
	>"$tmp/py.out" 2>&1) && [ "$(cat "$tmp/py.out")" = "$version" ] ||
	fail "installed Python package: $(tail -2 "$tmp/py.out")"
$MAKE --no-print-directory uninstall PREFIX="$prefix" >"$tmp/uninstall2.log" 2>&1 ||
	fail "make uninstall PREFIX=$prefix: $(tail -3 "$tmp/uninstall2.log")"
[ -e "$prefix" ] && fail "make uninstall PREFIX=$prefix left behind: $(cd "$prefix" && find . -mindepth 1 | head -5 | tr '\n' ' ')"

[ $fails = 0 ] || { echo "test_install: $fails failure(s)"; exit 1; }
echo "ok   test_install: make install DESTDIR and PREFIX, pkg-config (rpath), SONAME, mlf_* exports, headers as C99/C11/C++17, C and C++ examples, tools, uninstall"

#!/usr/bin/env bash
# fabric_example_c.sh - the out-of-tree C example (examples/c/push_get.c) against a live fabric:
# `make install` into a temporary DESTDIR, the example built there with pkg-config mlfabric and
# run with the installed libmlfabric.so (LD_LIBRARY_PATH) as worker w0 of a server on ps in
# MLF_MODE_DIRECT (the Async baseline, no scheduler). Its zero update is applied once (the
# server's version goes 0 -> 1, the model stays 0); the model it gets is all zeros, version 0 or
# 1 (Async: a get is answered with the model of that moment, before or after the update).
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabx 'ps:1:"server"' 'w0:10:"worker"'
dest=$WORK/dest
make -C "$ROOT" --no-print-directory install DESTDIR="$dest" PREFIX=/usr >"$WORK/install.log" 2>&1 ||
	fail "make install DESTDIR: $(tail -3 "$WORK/install.log")"
cp -r "$ROOT/examples/c" "$WORK/example"
PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig \
	make -C "$WORK/example" --no-print-directory >"$WORK/example.log" 2>&1 ||
	fail "examples/c does not build: $(tail -3 "$WORK/example.log")"
dp_start ps --scheduler none
dp_start w0 --scheduler none
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode async --n 1000 --count 1
wait_for "$WORK/server.out" "server ready" 10
LD_LIBRARY_PATH=$dest/usr/lib timeout 60 "$WORK/example/push_get" --cluster "$CLUSTER" --host w0 --server ps \
	--mode async --n 1000 >"$WORK/example.out" 2>"$WORK/example.err" ||
	fail "push_get failed: $(cat "$WORK/example.err")"
grep -q '^pushed id=[1-9][0-9]* n=1000$' "$WORK/example.out" || fail "push_get push: $(cat "$WORK/example.out")"
line=$(grep '^got ' "$WORK/example.out")
[[ "$line" =~ ^got\ version=[01]\ n=1000\ w0=0$ ]] || fail "push_get get: '$line', want version 0 or 1 and a zero model"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
grep -Eq '^server applied=1 version=1 .* w0=0 ' "$WORK/server.out" || fail "server end state: $(tail -1 "$WORK/server.out")"
ok "the installed example pushed one zero update (applied once) and got the model ($line) through libmlfabric.so"

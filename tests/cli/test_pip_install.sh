#!/usr/bin/env bash
# test_pip_install.sh - the Python package as a new user installs it (docs/python.md "Installing"):
# a fresh venv of Debian's python3 with --system-site-packages, `pip install --no-build-isolation .`
# offline (--no-index), then, from outside the tree, `import mlfabric`: mlfabric.__version__ is
# the Makefile's MLFABRIC_VERSION, the extension loads the libmlfabric copied into the venv (not
# the tree's build/), and Debian's torch is visible, so mlfabric.torch imports. The build reuses
# the library `make` built (MLFABRIC_LIBRARY=tree, setup.py). Run from the repository root after
# `make`. Needs no root and no network.
set -u
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

version=$(sed -n 's/^MLFABRIC_VERSION *:= *//p' Makefile)
[ -n "$version" ] || { echo "FAIL: no MLFABRIC_VERSION in Makefile"; exit 1; }
venv=$tmp/venv
$PY -m venv --system-site-packages "$venv" >"$tmp/venv.log" 2>&1 ||
	{ echo "FAIL: $PY -m venv: $(tail -3 "$tmp/venv.log") (Debian package python3-venv)"; exit 1; }
if ! MLFABRIC_LIBRARY=tree PIP_NO_CACHE_DIR=1 "$venv/bin/pip" install --no-build-isolation --no-index \
	--disable-pip-version-check . >"$tmp/pip.log" 2>&1; then
	echo "FAIL: pip install --no-build-isolation . into a venv:"
	tail -15 "$tmp/pip.log"
	exit 1
fi

# from outside the tree, so that nothing of python/ or build/ can be what is imported
site=$(cd "$tmp" && "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
got=$(cd "$tmp" && "$venv/bin/python" -c 'import mlfabric; print(mlfabric.__version__, mlfabric.__file__)' 2>"$tmp/py.err") ||
	fail "import mlfabric in the venv: $(tail -3 "$tmp/py.err")"
[ "${got%% *}" = "$version" ] || fail "mlfabric.__version__ is '${got%% *}', the Makefile's MLFABRIC_VERSION is $version"
[ "${got#* }" = "$site/mlfabric/__init__.py" ] || fail "mlfabric imported from '${got#* }', not the venv's $site"
ext=$(ls "$site"/mlfabric/_mlfabric*.so 2>/dev/null | head -1)
if [ -z "$ext" ]; then
	fail "no extension _mlfabric*.so in $site/mlfabric"
else
	ldd "$ext" | grep -qF "libmlfabric.so.${version%%.*} => $site/mlfabric/" ||
		fail "the extension does not load the venv's libmlfabric: $(ldd "$ext" | grep mlfabric)"
fi
if (cd "$tmp" && $PY -c 'import torch' 2>/dev/null); then
	(cd "$tmp" && "$venv/bin/python" -c 'import mlfabric.torch' 2>"$tmp/torch.err") ||
		fail "import mlfabric.torch in the venv (Debian's torch through --system-site-packages): $(tail -3 "$tmp/torch.err")"
fi

[ $fails = 0 ] || { echo "test_pip_install: $fails failure(s)"; exit 1; }
echo "ok   test_pip_install: venv --system-site-packages, pip install --no-build-isolation ., __version__ $version, mlfabric.torch"

# python/python.mk - the Python package mlfabric (python/mlfabric/, docs/python.md): `make` builds
# the importable package into build/python/mlfabric/ (the .py files, _version.py with the
# Makefile's MLFABRIC_VERSION, and the CPython extension _mlfabric<EXT_SUFFIX>, linked to
# build/libmlfabric.so through the rpath $ORIGIN/../..), so that PYTHONPATH=build/python
# /usr/bin/python3 imports it from the tree. `make install` installs it where Debian's python3
# looks for a PREFIX's packages, $(PREFIX)/$(PY_SITEDIR)/mlfabric/ (lib/python3/dist-packages for
# /usr, lib/python3.X/dist-packages for any other PREFIX) (the extension relinked with the rpath $(LIBDIR),
# none when the loader searches LIBDIR itself: LIBDIR_RPATH of the Makefile); `make uninstall`
# removes it. pip builds the same package from pyproject.toml and setup.py (docs/python.md
# "Installing"). The extension is app level: it includes only the API headers, as
# <mlfabric/mlfabric.h>.
# Python is Debian's /usr/bin/python3 (python3-dev for Python.h; `python3` on PATH may be
# another interpreter without torch).

PYTHON3       := /usr/bin/python3
PY_INCDIR     := $(shell $(PYTHON3) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_CFLAGS     := $(shell /usr/bin/python3-config --includes 2>/dev/null)
PY_EXT_SUFFIX := $(shell $(PYTHON3) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_PYVER      := $(shell $(PYTHON3) -c 'import sysconfig; print(sysconfig.get_python_version())' 2>/dev/null)
ifneq ($(filter-out $(NOPKG_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(wildcard $(PY_INCDIR)/Python.h),)
$(error Python.h not found (in '$(PY_INCDIR)'): run 'make deps' (Debian package python3-dev))
endif
endif

INC_python/mlfabric := -Iinclude $(PY_CFLAGS)

PY_PKG     := $(BUILD)/python/mlfabric
PY_SOURCES := $(wildcard python/mlfabric/*.py)
PY_VERSION := $(PY_PKG)/_version.py
PY_FILES   := $(patsubst python/mlfabric/%,$(PY_PKG)/%,$(PY_SOURCES)) $(PY_VERSION)
PY_EXT     := $(PY_PKG)/_mlfabric$(PY_EXT_SUFFIX)
# the extension's C files: _mlfabric.c (the type and module), _mlfabric_gets.c (gets in the
# background), _mlfabric_common.c (what both use; _mlfabric_int.h); setup.py lists the same
PY_EXT_SRCS := $(wildcard python/mlfabric/_mlfabric*.c)
PY_EXT_OBJ := $(patsubst python/mlfabric/%.c,$(BUILD)/python-ext/%.o,$(PY_EXT_SRCS))
PROGRAMS   += $(PY_FILES) $(PY_EXT)

$(PY_PKG)/%.py: python/mlfabric/%.py
	@mkdir -p $(@D)
	cp $< $@

# mlfabric.__version__: the Makefile's MLFABRIC_VERSION (setup.py writes the same file for pip)
$(PY_VERSION): Makefile
	@mkdir -p $(@D)
	printf '"""The version of mlfabric: the Makefile'"'"'s MLFABRIC_VERSION."""\n__version__ = "%s"\n' '$(MLFABRIC_VERSION)' >$@

# position-independent: the object goes into a shared object (in the tree and installed)
$(PY_EXT_OBJ): $(BUILD)/python-ext/%.o: python/mlfabric/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC $(INC_python/mlfabric) -c $< -o $@

$(PY_EXT): $(PY_EXT_OBJ) $(LIBMLFABRIC_SO)
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(PY_EXT_OBJ) -L$(BUILD) -lmlfabric -Wl,-rpath,'$$ORIGIN/../..'

# the Python unit tests (tests/python, run by build/tests/test_python of tools/cluster.mk) import
# the package from build/python
$(BUILD)/tests/test_python: $(PY_FILES) $(PY_EXT)

INTEG_TESTS += tests/integration/python_fabric.sh

# PREFIX, LIBDIR, DESTDIR: the top-level Makefile's `make install`
PY_SITEDIR = lib/$(if $(filter /usr /usr/,$(PREFIX)),python3,python$(PY_PYVER))/dist-packages
PY_DEST = $(DESTDIR)$(PREFIX)/$(PY_SITEDIR)/mlfabric
INSTALL_HOOKS   += install-python
UNINSTALL_HOOKS += uninstall-python
.PHONY: install-python uninstall-python
install-python: $(PY_FILES) $(PY_EXT_OBJ) $(LIBMLFABRIC_SO)
	install -d $(PY_DEST)
	install -m 644 $(PY_FILES) $(PY_DEST)/
	$(CC) -shared -o $(PY_DEST)/_mlfabric$(PY_EXT_SUFFIX) $(PY_EXT_OBJ) -L$(BUILD) -lmlfabric \
		$(if $(LIBDIR_RPATH),-Wl$(comma)-rpath$(comma)$(LIBDIR))
	chmod 644 $(PY_DEST)/_mlfabric$(PY_EXT_SUFFIX)

uninstall-python:
	rm -rf $(PY_DEST)
	-rmdir $(DESTDIR)$(PREFIX)/$(PY_SITEDIR) $(dir $(DESTDIR)$(PREFIX)/$(PY_SITEDIR)) $(DESTDIR)$(PREFIX)/lib 2>/dev/null

# tests/cli/test_pip_install.sh: pip install --no-build-isolation . into a fresh venv, with the
# library `make` built (pyproject.toml, setup.py)
UNIT_TESTS += $(BUILD)/tests/test_pip_install
$(BUILD)/tests/test_pip_install: tests/cli/test_pip_install.sh $(SO_REAL) $(PY_SOURCES) pyproject.toml setup.py
	@mkdir -p $(@D)
	install -m 755 $< $@

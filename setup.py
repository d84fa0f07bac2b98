"""setup.py - how pip and python3 -m build compile the extension mlfabric._mlfabric (pyproject.toml).

The package's version is the Makefile's MLFABRIC_VERSION (the one place of the version: the
soname, mlfabric.pc and mlfabric.__version__, which build_py writes into mlfabric/_version.py).
The extension reaches libmlfabric in the first of these ways that applies (docs/python.md
"Installing"); MLFABRIC_LIBRARY=tree|pkg-config|sources forces one:
  tree        a source tree where `make` built build/libmlfabric.so.VERSION: that library is
              copied into the package (mlfabric/libmlfabric.so.MAJOR) and the extension finds
              it through the rpath $ORIGIN, so the install does not depend on the tree;
  pkg-config  an installed libmlfabric of the same version (`make install`; pkg-config
              mlfabric, whose Libs carry the rpath of a prefix outside the loader's paths);
  sources     the library's sources (the tree or the sdist: lib/base, lib/proto, lib/mlfabric)
              compiled into the extension; needs jansson, libcrypto and libsodium (pkg-config).
setuptools' own build files go to build/setuptools/<way>/, beside make's outputs.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
LIB_DIRS = ("lib/base", "lib/proto", "lib/mlfabric")


def makefile_version():
    """MLFABRIC_VERSION of the Makefile next to this file."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        m = re.search(r"^MLFABRIC_VERSION\s*:=\s*(\S+)\s*$", f.read(), re.M)
    if not m:
        sys.exit("setup.py: no MLFABRIC_VERSION in Makefile")
    return m.group(1)


VERSION = makefile_version()
MAJOR = VERSION.split(".")[0]


def pkg_config(*args):
    """pkg-config's output split into words, or None when it fails (or is not installed)."""
    try:
        out = subprocess.run(["pkg-config", *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.split()


def tree_library():
    """The tree's build/libmlfabric.so.VERSION, or None."""
    path = os.path.join(ROOT, "build", f"libmlfabric.so.{VERSION}")
    return path if os.path.isfile(path) else None


def choose_library():
    """(how, Extension keyword arguments) of the first way to reach libmlfabric that applies."""
    forced = os.environ.get("MLFABRIC_LIBRARY", "")
    if forced not in ("", "tree", "pkg-config", "sources"):
        sys.exit(f"setup.py: MLFABRIC_LIBRARY={forced}: use tree, pkg-config or sources")
    # the extension's C files (python/python.mk builds the same): the type and module, the gets
    # in the background, what both use
    src = sorted(glob.glob(os.path.join("python", "mlfabric", "_mlfabric*.c")))
    if forced in ("", "tree") and tree_library():
        return "tree", dict(sources=src, include_dirs=["include"], library_dirs=["build"],
                            libraries=["mlfabric"], extra_link_args=["-Wl,-rpath,$ORIGIN"])
    if forced == "tree":
        sys.exit(f"setup.py: MLFABRIC_LIBRARY=tree but no build/libmlfabric.so.{VERSION}: run make")
    if forced in ("", "pkg-config") and pkg_config("--exact-version", VERSION, "mlfabric") is not None:
        return "pkg-config", dict(sources=src, extra_compile_args=pkg_config("--cflags", "mlfabric"),
                                  extra_link_args=pkg_config("--libs", "mlfabric"))
    if forced == "pkg-config":
        sys.exit(f"setup.py: MLFABRIC_LIBRARY=pkg-config but pkg-config finds no mlfabric {VERSION}: "
                 "run make install (and set PKG_CONFIG_PATH to PREFIX/lib/pkgconfig)")
    lib_srcs = sorted(f for d in LIB_DIRS for f in glob.glob(os.path.join(d, "*.c")))
    deps = pkg_config("--cflags", "--libs", "jansson", "libcrypto", "libsodium")
    if not lib_srcs or deps is None:
        sys.exit(f"setup.py: cannot build mlfabric {VERSION}: no build/libmlfabric.so.{VERSION} "
                 f"(run make), no installed libmlfabric {VERSION} (pkg-config mlfabric; run make "
                 "install), and " + ("no library sources" if not lib_srcs else
                                     "pkg-config finds no jansson/libcrypto/libsodium (libjansson-dev, libssl-dev, "
                                     "libsodium-dev)"))
    return "sources", dict(sources=src + lib_srcs,
                           include_dirs=["include/mlfabric", "include"] + list(LIB_DIRS),
                           extra_compile_args=["-std=gnu11"] + [w for w in deps if w.startswith("-I")],
                           extra_link_args=[w for w in deps if not w.startswith("-I")] + ["-lpthread", "-lm"])


HOW, EXT_ARGS = choose_library()


class BuildPy(build_py):
    """build_py that also writes mlfabric/_version.py (the Makefile's version)."""

    def run(self):
        super().run()
        path = os.path.join(self.build_lib, "mlfabric", "_version.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'"""The version of mlfabric: the Makefile\'s MLFABRIC_VERSION."""\n'
                    f'__version__ = "{VERSION}"\n')


class BuildExt(build_ext):
    """build_ext that always links the extension again (the library it links may have changed
    where setuptools does not look) and, with the tree's library, copies it into the package."""

    def run(self):
        print(f"setup.py: mlfabric {VERSION}: the extension uses libmlfabric from {HOW}")
        self.force = True
        super().run()
        if HOW == "tree":
            dest = os.path.join(self.build_lib, "mlfabric", f"libmlfabric.so.{MAJOR}")
            shutil.copyfile(tree_library(), dest)


# one build folder per way, so that nothing of another way's build (the tree's library copied
# into the package) ends up in this one's wheel
BUILD_BASE = os.path.join("build", "setuptools", HOW)
os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)
setup(
    version=VERSION,
    ext_modules=[Extension("mlfabric._mlfabric", **EXT_ARGS)],
    cmdclass={"build_py": BuildPy, "build_ext": BuildExt},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
)

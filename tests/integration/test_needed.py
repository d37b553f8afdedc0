#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The link lines say the architecture (docs/architecture.md, "Where each
library may be used"): each program's dynamic NEEDED list, read with
readelf, holds only the libraries its layers may use.

    test_needed.py SOURCE_ROOT PATH=ITEM,ITEM... [PATH=...]

An ITEM lib/FOLDER allows the outside libraries of that lib/ folder and of
the folders below it, read from the meson files (FOLDER_ext_deps in
lib/FOLDER/meson.build, the layers in lib/meson.build): the one place they
are written. Any other ITEM is a library the program links itself, named
without "lib" and its version ("pam" for libpam.so.0). The C library, the
dynamic loader and the sanitizer runtimes of an ASan/UBSan build are always
allowed. Any other NEEDED entry fails the test, naming the program and the
library."""
import os
import re
import shutil
import subprocess
import sys

ALWAYS = {"c", "m", "asan", "ubsan", "lsan", "gcc_s", "stdc++", "pthread", "dl"}
# a meson dependency variable (NAME_dep) -> its NEEDED name; None: no library
SONAME = {"crypto": "crypto", "thread": None, "lmdb": "lmdb", "libevent": "event",
          "libcurl": "curl", "idn2": "idn2", "zlib": "z", "jsonc": "json-c",
          "unistring": "unistring", "bz2": "bz2", "m": "m",
          "xxhash": None}  # header-only (XXH_INLINE_ALL): nothing to link


def folder_libs(root, folder, seen=None):
    """The NEEDED names a lib/ folder and the folders below it may bring."""
    seen = set() if seen is None else seen
    if folder in seen:
        return set()
    seen.add(folder)
    with open(os.path.join(root, "lib", folder, "meson.build"), encoding="utf-8") as fh:
        m = re.search(r"^%s_ext_deps = \[([^\]]*)\]" % folder, fh.read(), re.M)
    if not m:
        raise SystemExit("FAIL: lib/%s/meson.build declares no %s_ext_deps" % (folder, folder))
    libs = set()
    for dep in re.findall(r"(\w+)_dep", m.group(1)):
        if dep not in SONAME:
            raise SystemExit("FAIL: %s_dep of lib/%s: add its NEEDED name to SONAME in %s"
                             % (dep, folder, os.path.basename(__file__)))
        libs.add(SONAME[dep])
    with open(os.path.join(root, "lib", "meson.build"), encoding="utf-8") as fh:
        row = re.search(r"\[\s*'%s'\s*,\s*\[([^\]]*)\]\s*\]" % folder, fh.read())
    for below in re.findall(r"'(\w+)'", row.group(1) if row else ""):
        libs |= folder_libs(root, below, seen)
    return libs - {None}


def allowed(root, items):
    out = set(ALWAYS)
    for item in filter(None, items.split(",")):
        out |= folder_libs(root, item[4:]) if item.startswith("lib/") else {item}
    return out


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True,
                         text=True).stdout
    names = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    short = []
    for n in names:
        m = re.match(r"(?:lib)?([A-Za-z0-9_+-]+?)(?:-[0-9.]+)?\.so", n)
        short.append(m.group(1) if m else n)
    return short


def main():
    if not shutil.which("readelf"):
        print("SKIP: readelf not found (binutils)")
        return 77
    bad = 0
    root = sys.argv[1]
    for spec in sys.argv[2:]:
        path, _, items = spec.rpartition("=")
        allow = allowed(root, items)
        got = needed(path)
        extra = [n for n in got if n not in allow]
        print("%s: NEEDED %s" % (path, " ".join(got)))
        for n in extra:
            print("  FAIL: %s needs lib%s, which its layers may not use" % (path, n))
            bad += 1
    print("%d programs checked, %d unexpected libraries" % (len(sys.argv) - 2, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

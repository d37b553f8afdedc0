#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The link lines say the architecture (docs/architecture.md, "Where each
library may be used"): each program's dynamic NEEDED list, read with
readelf, holds only the libraries its layers may use.

    test_needed.py PATH=lib1,lib2 [PATH=...]

A library is named without "lib" and its version ("crypto" for
libcrypto.so.3). The C library, the dynamic loader and the sanitizer
runtimes of an ASan/UBSan build are always allowed. Any other NEEDED entry
fails the test, naming the program and the library."""
import re
import shutil
import subprocess
import sys

ALWAYS = {"c", "m", "asan", "ubsan", "lsan", "gcc_s", "stdc++", "pthread", "dl"}


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
    for spec in sys.argv[1:]:
        path, _, allowed = spec.rpartition("=")
        allow = set(filter(None, allowed.split(","))) | ALWAYS
        got = needed(path)
        extra = [n for n in got if n not in allow]
        print("%s: NEEDED %s" % (path, " ".join(got)))
        for n in extra:
            print("  FAIL: %s needs lib%s, which its layers may not use" % (path, n))
            bad += 1
    print("%d programs checked, %d unexpected libraries" % (len(sys.argv) - 1, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

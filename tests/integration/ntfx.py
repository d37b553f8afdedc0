# SPDX-License-Identifier: MIT
"""Shared fixture of the NTLM tests (test_ntlm.py, test_audit.py,
tests/bench/bench-audit.py): NT hashes made here, independently of breachd
(Python's UTF-16LE codec and OpenSSL's MD4 through ctypes, from a library
context of its own with the legacy provider), NTLM range mirrors
(SUFFIX27:COUNT per-prefix files), and an nginx location that serves HIBP's
two corpora at one path: /range/PREFIX for SHA-1, /range/PREFIX?mode=ntlm for
NT hashes. Standard library only; dtest.py is the harness."""
import ctypes
import ctypes.util
import os

_MD4 = {}


def _md4_fn():
    if "fn" not in _MD4:
        lib = ctypes.CDLL(ctypes.util.find_library("crypto") or "libcrypto.so.3")
        lib.OSSL_LIB_CTX_new.restype = ctypes.c_void_p
        lib.OSSL_PROVIDER_load.restype = ctypes.c_void_p
        lib.OSSL_PROVIDER_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.EVP_MD_fetch.restype = ctypes.c_void_p
        lib.EVP_MD_fetch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.EVP_Digest.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        libctx = lib.OSSL_LIB_CTX_new()
        if not libctx or not lib.OSSL_PROVIDER_load(libctx, b"legacy"):
            raise RuntimeError("OpenSSL's legacy provider (MD4) cannot be loaded")
        md = lib.EVP_MD_fetch(libctx, b"MD4", None)
        if not md:
            raise RuntimeError("OpenSSL has no MD4")

        def md4(data):
            out = ctypes.create_string_buffer(16)
            if lib.EVP_Digest(data, len(data), out, None, md, None) != 1:
                raise RuntimeError("EVP_Digest(MD4) failed")
            return out.raw
        _MD4["fn"] = md4
    return _MD4["fn"]


def md4hex(data):
    return _md4_fn()(data).hex().upper()


def nthash(pw):
    """The NT hash of a password (str): MD4 of its UTF-16LE text, uppercase hex."""
    return md4hex(pw.encode("utf-16-le"))


EMPTY_NT = "31D6CFE0D16AE931B73C59D7E0C089C0"


def write_ntlm_range(mirror, entries, padding=0):
    """Per-prefix files of an NTLM mirror: entries {hash32: count}, CRLF lines
    SUFFIX27:COUNT as HIBP serves them, plus `padding` count-0 lines in each."""
    os.makedirs(mirror, exist_ok=True)
    by = {}
    for h, c in entries.items():
        by.setdefault(h[:5], []).append("%s:%d" % (h[5:], c))
    for p, lines in by.items():
        lines += ["%027X:0" % (0xABCDEF * (i + 1)) for i in range(padding)]
        with open(os.path.join(mirror, p + ".txt"), "w", newline="") as f:
            f.write("\r\n".join(lines) + "\r\n")


def nginx_location(root):
    """An nginx location serving ROOT/PREFIX.txt at /range/PREFIX (SHA-1)
    and ROOT/ntlm/PREFIX.txt at /range/PREFIX?mode=ntlm, as HIBP does (an
    `if` would make a nested location without the try_files)."""
    return ('location ~ "^/range/([0-9A-F]{5})$" { root %s; '
            'try_files /$arg_mode/$1.txt =404; }' % root)

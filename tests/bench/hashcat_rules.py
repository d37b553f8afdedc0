#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Apply hashcat rule files to a word list: a second independent tweak
generator for bench-similar.sh (the first is john's wordlist rules).

    hashcat_rules.py WORDLIST RULEFILE...   candidates on stdout, one a line

Implements hashcat's rule functions (hashcat.net/wiki "rule_based_attack"):
: l u c C t TN r d pN f { } $X ^X [ ] DN xNM ONM iNX oNX 'N sXY @X zN ZN q
*NM +N -N .N ,N yN YN E k K LN RN. Positions are 0-9 then A-Z (10-35); a
position out of range leaves the word as it is, as hashcat does. A rule
holding a function not listed (memory, rejection rules) is skipped and
counted on stderr. Comment lines ("#!comment") of the word list and "#"
lines of the rule files are skipped; a candidate is printed each time a
rule makes it (duplicates included, as hashcat tries them)."""
import sys

ARITY = {}
for op in ":lucCtrdf{}[]qkKE":
    ARITY[op] = 0
for op in "Tp DzZ'@$^+-.,yYLR".replace(" ", ""):
    ARITY[op] = 1
for op in "xOio s*".replace(" ", ""):
    ARITY[op] = 2
POSITIONAL = set("TpDzZ'+-.,yYLRxOio*")  # arguments that are positions or counts


def pos(c):
    c = chr(c)
    if c.isdigit():
        return ord(c) - 48
    if "A" <= c <= "Z":
        return ord(c) - 55
    return None


def parse(line):
    """A rule line into [(op, args)], or None when it holds an unknown op."""
    out, i, n = [], 0, len(line)
    while i < n:
        op = chr(line[i])
        if op == " ":
            i += 1
            continue
        if op not in ARITY:
            return None
        args = line[i + 1:i + 1 + ARITY[op]]
        if len(args) < ARITY[op]:
            return None
        out.append((op, args))
        i += 1 + ARITY[op]
    return out


def case_ops(op, w):
    if op == "l":
        return w.lower()
    if op == "u":
        return w.upper()
    if op == "c":
        return w[:1].upper() + w[1:].lower()
    if op == "C":
        return w[:1].lower() + w[1:].upper()
    if op == "t":
        return w.swapcase()
    if op == "E":
        return w.lower().title()
    return None


def simple_ops(op, w):
    table = {
        ":": lambda: w, "r": lambda: w[::-1], "d": lambda: w + w, "f": lambda: w + w[::-1],
        "{": lambda: w[1:] + w[:1], "}": lambda: w[-1:] + w[:-1], "[": lambda: w[1:],
        "]": lambda: w[:-1], "q": lambda: bytes(c for c in w for _ in (0, 1)),
        "k": lambda: w[1:2] + w[:1] + w[2:] if len(w) >= 2 else w,
        "K": lambda: w[:-2] + w[-1:] + w[-2:-1] if len(w) >= 2 else w,
    }
    f = table.get(op)
    return f() if f else case_ops(op, w)


def char_ops(op, a, w):
    """Functions of one character argument."""
    if op == "$":
        return w + a
    if op == "^":
        return a + w
    if op == "@":
        return w.replace(a, b"")
    return None


def pos_ops(op, n, w):
    """Functions of one position or count."""
    ln = len(w)
    if op == "T":
        return w[:n] + w[n:n + 1].swapcase() + w[n + 1:] if n < ln else w
    if op == "p":
        return w * (n + 1)
    if op == "D":
        return w[:n] + w[n + 1:] if n < ln else w
    if op == "'":
        return w[:n]
    if op == "z":
        return w[:1] * n + w
    if op == "Z":
        return w + w[-1:] * n
    if op == "y":
        return w[:n] + w if n <= ln else w
    if op == "Y":
        return w + w[ln - n:] if n <= ln else w
    if n >= ln:
        return w
    c = w[n]
    new = {"+": c + 1, "-": c - 1, "L": c << 1, "R": c >> 1,
           ".": w[n + 1] if n + 1 < ln else None, ",": w[n - 1] if n > 0 else None}.get(op)
    if new is None:
        return w
    return w[:n] + bytes([new & 0xFF]) + w[n + 1:]


def two_ops(op, a, b, w):
    ln = len(w)
    if op == "s":
        return w.replace(a, b)
    n = pos(a[0])
    if n is None:
        return w
    if op == "i":
        return w[:n] + b + w[n:] if n <= ln else w
    if op == "o":
        return w[:n] + b + w[n + 1:] if n < ln else w
    m = pos(b[0])
    if m is None:
        return w
    if op == "x":
        return w[n:n + m] if n < ln else w
    if op == "O":
        return w[:n] + w[n + m:] if n < ln else w
    if op == "*":
        if n >= ln or m >= ln:
            return w
        v = bytearray(w)
        v[n], v[m] = v[m], v[n]
        return bytes(v)
    return w


def apply(rule, w):
    for op, args in rule:
        if ARITY[op] == 0:
            w = simple_ops(op, w)
        elif ARITY[op] == 1 and op in POSITIONAL:
            n = pos(args[0])
            w = w if n is None else pos_ops(op, n, w)
        elif ARITY[op] == 1:
            w = char_ops(op, args, w)
        else:
            w = two_ops(op, args[:1], args[1:], w)
    return w


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    words = [l.rstrip(b"\r\n") for l in open(sys.argv[1], "rb")]
    words = [w for w in words if w and not w.startswith(b"#!comment")]
    rules, skipped = [], 0
    for path in sys.argv[2:]:
        for raw in open(path, "rb"):
            line = raw.rstrip(b"\r\n")
            if not line or line.startswith(b"#"):
                continue
            r = parse(line)
            if r is None:
                skipped += 1
            else:
                rules.append(r)
    out = sys.stdout.buffer
    for w in words:
        for r in rules:
            c = apply(r, w)
            if c:
                out.write(c + b"\n")
    print("hashcat_rules: %d rules, %d skipped, %d words" % (len(rules), skipped, len(words)),
          file=sys.stderr)


if __name__ == "__main__":
    main()

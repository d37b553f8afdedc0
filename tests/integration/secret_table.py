# SPDX-License-Identifier: MIT
"""tests/data/secret_spellings.txt: e-mail addresses spelled inside URLs.

The same table test_url_secret.c reads; expand() follows its header (the
placeholders {L} {D} {H} and their U, F, P, I forms) exactly as the C test
does, so the unit test and the integration tests cannot drift apart.
"""
import os

VICTIM = ("alice", "victim-mail.example")
OTHER = ("bob", "other-mail.example")


class Row:
    def __init__(self, n, kind, tmpl, indexed, note):
        self.n, self.kind, self.tmpl, self.indexed, self.note = n, kind, tmpl, indexed, note

    def url(self, address=VICTIM):
        return expand(self.tmpl, address, self.n)

    def expr(self):
        return None if self.indexed == "-" else expand(self.indexed, VICTIM, self.n)

    def __repr__(self):
        return "row %d (%s, %s)" % (self.n, self.kind, self.note)


def load(source_root):
    rows = []
    with open(os.path.join(source_root, "tests", "data", "secret_spellings.txt"),
              encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            kind, tmpl, indexed, note = line.split("\t")
            rows.append(Row(len(rows) + 1, kind, tmpl, indexed, note))
    return rows


def _form(value, how):
    if how == "":
        return value
    if how == "U":
        return value.upper()
    if how == "F":
        return "".join(chr(0xFF00 + ord(c) - 0x20) for c in value)
    if how == "P":
        return "".join("%%%02X" % b for b in value.encode())
    if how == "I":
        return value.replace(".", "\u3002")
    raise ValueError("unknown placeholder form %r" % how)


def expand(tmpl, address, n):
    local, domain = address
    out, i = [], 0
    while i < len(tmpl):
        j = tmpl.find("}", i) if tmpl[i] == "{" else -1
        if j < 0:
            out.append(tmpl[i])
            i += 1
            continue
        name, i = tmpl[i + 1:j], j + 1
        if name == "H":
            out.append("s%d.victims.example" % n)
        else:
            out.append(_form(local if name[0] == "L" else domain, name[1:]))
    return "".join(out)

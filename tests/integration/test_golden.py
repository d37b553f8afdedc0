#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Golden figures: what breachd shows of itself stays byte for byte the same
across refactors (a figure moved into a table, a kind into a row):

  stats:         the STATS answer's keys, in order, and every value that is
                 not a number (numbers are written "#": they move with time);
  metrics:       the /metrics text's HELP and TYPE lines and each series'
                 name and labels, in order (values "#");
  check_config:  breachd --check-config's dump of a configuration that sets
                 a key of every section (the test's directory written <DIR>).

The configuration has a password filter and a mirror, an [ntlm] and a
[urls] upstream, the range endpoint and the metrics, so that every kind's
lines are there. A change that means to change them rewrites the files
with BREACHD_GOLDEN_UPDATE=1 and shows the difference in its commit:
tests/data/golden/."""
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, test  # noqa: E402

NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def golden(name, text):
    path = os.path.join(dtest.ARGS.source_root, "tests", "data", "golden", name)
    if os.environ.get("BREACHD_GOLDEN_UPDATE") == "1":
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        want = f.read()
    if text != want:
        import difflib
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                 path, "breachd"))[:60])
        raise AssertionError("%s differs (BREACHD_GOLDEN_UPDATE=1 rewrites it):\n%s"
                             % (name, diff))


def config(ctx, mport, hport):
    c = dtest.corpus()
    return ctx.config(
        daemon={"canary": "0", "metrics_listen": "127.0.0.1:%d" % mport},
        passwords={"filter": c.filter, "upstream": "file://%s/{prefix}.txt" % c.mirror},
        ntlm={"upstream": "file://%s/{prefix}.txt" % c.mirror},
        urls={"upstream": "file://%s/{prefix}.txt" % c.mirror},
        http={"listen": "127.0.0.1:%d" % hport},
        # libbreachd-dns's section: checked and printed by --check-config
        dns={"action": "sinkhole", "action.phishing": "redirect", "redirect": "block.example",
             "sinkhole": "10.0.0.1"})


def stats_text(line):
    out = []
    for kv in line.split():
        k, v = kv.split("=", 1)
        out.append("%s=%s" % (k, "#" if NUMBER.match(v) else v))
    return "\n".join(out) + "\n"


def metrics_text(body):
    out = []
    for ln in body.splitlines():
        if ln.startswith("#"):
            out.append(ln)
        elif ln:
            out.append(ln.rsplit(" ", 1)[0] + " #")
    return "\n".join(out) + "\n"


@test
def figures(ctx):
    mport, hport = dtest.free_port(), dtest.free_port()
    conf = config(ctx, mport, hport)
    d = ctx.daemon(conf)
    cl = d.client()
    c = dtest.corpus()
    cl.ask("1 PW " + c.password)
    cl.ask("2 NT " + "8846F7EAEE8FB117AD06BDD830B7586C")
    cl.ask("3 URL http://example.com/")
    line = cl.ask("st STATS")
    check(line.startswith("st STATS "), line)
    golden("stats.txt", stats_text(line[len("st STATS "):]))
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10).read()
    golden("metrics.txt", metrics_text(body.decode()))
    cl.close()
    d.stop_ok()
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       env=dtest.base_env(), capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "--check-config: %d %s" % (r.returncode, r.stderr))
    text = r.stdout.replace(ctx.dir, "<DIR>").replace(c.mirror, "<MIRROR>")
    text = text.replace(c.filter, "<FILTER>")
    text = text.replace(":%d" % mport, ":<PORT>").replace(":%d" % hport, ":<PORT>")
    # root, or the test's own uid when it does not run as root (dtest.Ctx.config)
    text = re.sub(r"(?m)^(admin_users = |# admin_users: uids ).*$", r"\1<ADMIN>", text)
    golden("check-config.txt", text)


if __name__ == "__main__":
    dtest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Verification records (docs/filter-format.md, "Start-up: verification
records") with a real breachd: a filter whose PATH.verified matches is
loaded without hashing its body; bits flipped in place in the body of a
recorded filter, even with its mtime set back, are never served: the record
no longer matches, the body is hashed and the file refused."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402

NOT_HASHED = "body not hashed"
HASHED = "body hashed whole"


def setup(ctx, n=500):
    keys = fleetfx.passwords("v", n)
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, keys)
    built = fleetfx.build(ctx, ctx.path("a.bfuse"), keys, 1)
    os.makedirs(ctx.path("host"), exist_ok=True)
    live = ctx.path("host", "p.bfuse")
    fleetfx.install(built, live)
    conf = ctx.config(passwords=dict(filter=live, upstream="file://%s/{prefix}.txt" % mirror))
    return keys, live, conf


def wrong_answers(d, keys):
    """Keys of the filter that breachd does not answer PWNED with their count."""
    cl = d.client(timeout=30)
    wrong = []
    for i, h in enumerate(sorted(keys)):
        ans = cl.ask("q%d PW %s" % (i, h))
        if ans != "q%d PWNED %d" % (i, keys[h]):
            wrong.append(ans)
    cl.close()
    return wrong


def flip_in_place(path, offsets):
    """Flip one bit at each offset, in place (the same inode), then set the
    mtime back to what it was, as only the file's owner (root) can."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        for off in offsets:
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ 0x10]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    eq(os.stat(path).st_ino, st.st_ino, "the same inode")
    eq(os.stat(path).st_mtime_ns, st.st_mtime_ns, "the mtime set back")


@test
def record_lets_start_skip_the_hash(ctx):
    keys, live, conf = setup(ctx)
    d = ctx.daemon(conf)
    check(HASHED in d.log(), "no record yet: hashed\n" + d.log())
    d.stop_ok()
    r = ctx.breachctl("filter", "verify", live)
    check(os.path.exists(live + ".verified"), "filter verify wrote the record: " + r.stderr)
    info = ctx.breachctl("filter", "info", live).stdout
    check("verified record:   valid" in info, info)
    d = ctx.daemon(conf)
    check(NOT_HASHED in d.log(), "the record vouched for the body\n" + d.log())
    # the record's time as a date, not a Unix time (the log is read by people)
    check(re.search(r"\.verified of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ vouches for it", d.log()),
          "the record's date\n" + d.log())
    eq(wrong_answers(d, keys)[:5], [], "answers from the recorded file")
    d.stop_ok()


@test
def flipped_bits_in_a_recorded_file_are_never_served(ctx):
    """The attack on the record: bytes of the fingerprint arrays changed
    under a valid record, the mtime put back. breachd must not load it."""
    keys, live, conf = setup(ctx)
    ctx.breachctl("filter", "verify", live)
    size = os.path.getsize(live)
    flip_in_place(live, [4096 + (size - 4096) * i // 10 for i in range(1, 9)])
    d = ctx.daemon(conf, wait=False)
    try:
        d.wait_ready()
        started = True
    except AssertionError:
        started = False
    log = d.log()
    check("body checksum mismatch" in log, "the body was hashed and refused:\n" + log)
    if started:  # serving without the file: no answer may come from it
        eq(wrong_answers(d, keys)[:5], [], "no wrong CLEAN from the flipped file")
        d.stop()
    check(NOT_HASHED not in log, "the stale record was not trusted")


@test
def reload_of_a_replaced_file_hashes_it(ctx):
    """A file renamed over the path is another inode: its predecessor's
    record does not vouch for it; the RELOAD hashes it (and, once verified,
    a record for it lets the next start skip the hash)."""
    keys, live, conf = setup(ctx)
    ctx.breachctl("filter", "verify", live)
    d = ctx.daemon(conf)
    check(NOT_HASHED in d.log(), d.log())
    more = dict(keys)
    more.update(fleetfx.passwords("w", 100))
    dtest.write_range(ctx.path("mirror"), more)
    fleetfx.install(fleetfx.build(ctx, ctx.path("b.bfuse"), more, 2), live)
    cl = d.client(timeout=30)
    eq(cl.ask("r RELOAD", timeout=60), "r RELOADED", "reload")
    cl.close()
    check(d.log().count(HASHED) == 1, "the new file was hashed\n" + d.log())
    eq(wrong_answers(d, more)[:5], [], "answers from the new file")
    d.stop_ok()


@test
def fetch_and_rollback_write_the_record(ctx):
    """filter fetch records the file it installs, filter rollback the file
    it puts back: breachd's next start does not hash either."""
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    args = ["--url", ng.url("p.bfuse"), "--pubkey", pub, "--output", live, "--no-reload"]
    for gen in (1, 2):
        keys = fleetfx.passwords("f%d" % gen, 300)
        built = fleetfx.build(ctx, ctx.path("g%d.bfuse" % gen), keys, gen, sign=sec)
        fleetfx.publish(built, root, "p.bfuse")
        fleetfx.fetch(ctx, *args)
        info = ctx.breachctl("filter", "info", live).stdout
        check("verified record:   valid" in info, "after the fetch of %d: %s" % (gen, info))
    ctx.breachctl("filter", "rollback", "--no-reload", live)
    info = ctx.breachctl("filter", "info", live).stdout
    check("generation:        1" in info and "verified record:   valid" in info, info)
    # An unchanged file without a record (installed before records, or by
    # hand): the next fetch that finds nothing new records it.
    os.unlink(live + ".verified")
    fleetfx.publish(ctx.path("g1.bfuse"), root, "p.bfuse")
    fleetfx.fetch(ctx, *args)
    info = ctx.breachctl("filter", "info", live).stdout
    check("verified record:   valid" in info, "an unchanged file recorded: " + info)


if __name__ == "__main__":
    dtest.main()

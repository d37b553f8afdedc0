# SPDX-License-Identifier: MIT
"""Blocklist feed fixtures, one per input format, written by this project
(no third-party list is copied): each has comments, blank lines, CRLF line
ends, a UTF-8 byte order mark, mixed case, the format's tricky lines and one
malformed line.

FIXTURES: a list of Feed. write_all(dir) writes them; each knows
  blocked  {url: (category, expression)} that a filter built from it blocks,
  safe     [url] near misses that stay SAFE,
  bad      (line, text): the malformed line's FILE:LINE error,
  skipped  {kind name: count} reported by `filter build`.
Used by test_url_formats.py (and its fixtures document docs/breachctl.1's
INPUT FORMATS table by example).
"""
import os

BOM = "\ufeff"


class Feed:
    def __init__(self, name, fmt, category, lines, blocked, safe, bad, skipped=None,
                 column=None, detected=True):
        self.name, self.fmt, self.category = name, fmt, category
        self.lines, self.blocked, self.safe = lines, blocked, safe
        self.bad, self.skipped, self.column = bad, skipped or {}, column
        self.detected = detected  # auto-detection finds fmt
        self.path = None

    def text(self):
        return BOM + "\r\n".join(self.lines) + "\r\n"

    def format_args(self):
        a = ["--format", self.fmt]
        if self.column:
            a += ["--column", self.column]
        return a


def _line_of(lines, needle):
    for i, ln in enumerate(lines):
        if needle in ln:
            return i + 1
    raise KeyError(needle)


ADBLOCK = [
    "[Adblock Plus 2.0]",
    "! Title: breachd test rules (generated)",
    "! Expires: 1 day",
    "",
    "||Ads.Example.COM^",
    "||tracker.example.net^$third-party",
    "@@||good.ads.example.com^",
    "||example.org/banner/*",
    "example.com##.ad-box",
    "/banner[0-9]+\\.gif/",
    "||metrics.example.io^|",
    "||pixel.*.example.edu^",
    "||exa%mple.bad^",
    "||CDN.Example.Info",
]

DNSMASQ = [
    "# dnsmasq blocklist (generated)",
    "",
    "address=/Malware.Example.NET/0.0.0.0",
    "address=/phish.example.org/bad.example.io/",
    "server=/c2.example.com/",
    "local=/drop.example.edu/",
    "server=/corp.example.com/10.0.0.1",
    "cache-size=1000",
    "address=missing-slashes.example",
    "address=/v6.example.info/::",
]

UNBOUND = [
    "# unbound local zones (generated)",
    "server:",
    "",
    "  local-zone: \"Evil.Example.COM\" always_nxdomain",
    "  local-zone: \"refused.example.net.\" refuse",
    "  local-zone: \"static.example.org\" static  # a trailing comment",
    "  local-data: \"host.example.io A 0.0.0.0\"",
    "  local-zone: \"allowed.example.com\" transparent",
    "  verbosity: 1",
    "  local-zone: \"typo.example.com\" nxdomainn",
]

RPZ = [
    "$TTL 300",
    "$ORIGIN rpz.example.",
    "@ IN SOA localhost. hostmaster.localhost. (",
    "        2026010101 ; serial",
    "        3600 600 86400 300 )",
    "  IN NS localhost.",
    "; relative owner names",
    "Phish.Example.COM CNAME .",
    "*.wild.example.net CNAME .",
    "drop.example.org 300 IN CNAME rpz-drop.",
    "absolute.example.io.rpz.example. CNAME *.",
    "allowed.example.com CNAME rpz-passthru.",
    "32.1.2.0.192.rpz-ip CNAME .",
    "walled.example.edu A 192.0.2.80",
    "broken.example.org CNAME",
]

URLHAUS = [
    "################################################################",
    "# abuse.ch URLhaus Database Dump (CSV - recent URLs only)       #",
    "# Last updated: 2026-01-01 00:00:00 (UTC)                       #",
    "#                                                              #",
    "# Terms Of Use: generated test data, not a real dump           #",
    "################################################################",
    "# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter",
    '"1000001","2026-01-01 00:00:01","http://198.51.100.7/bins/Mozi.m","online",'
    '"2026-01-01 00:00:01","malware_download","elf,Mozi","https://urlhaus.example/url/1/","tester"',
    '"1000002","2026-01-01 00:00:02","HTTP://Payload.Example.NET/Drop/Loader.EXE","offline","",'
    '"malware_download","exe","https://urlhaus.example/url/2/","tester"',
    "",
    '"1000003","2026-01-01 00:00:03","http://files.example.org/a,b.zip","online","",'
    '"malware_download","say ""hi"", ok","https://urlhaus.example/url/3/","tester"',
    '"1000004","2026-01-01 00:00:04",http://unquoted.example.com/x.sh,"online","",'
    '"malware_download","sh","https://urlhaus.example/url/4/","tester"',
    '"1000005","2026-01-01 00:00:05","http://broken.example.com/"x","online","","malware_download",'
    '"","https://urlhaus.example/url/5/","tester"',
]

PHISHTANK_CSV = [
    "phish_id,url,phish_detail_url,submission_time,verified,verification_time,online,target",
    "8000001,https://Login.Example-Bank.COM/signin?acct=1,http://phishtank.example/8000001,"
    "2026-01-01T00:00:00+00:00,yes,2026-01-01T00:10:00+00:00,yes,Other",
    '8000002,"http://secure.example.net/update,account/",http://phishtank.example/8000002,'
    '2026-01-01T00:00:00+00:00,yes,2026-01-01T00:10:00+00:00,yes,"Bank, Inc."',
    "",
    '8000003,http://multi.example.org/verify,http://phishtank.example/8000003,'
    '2026-01-01T00:00:00+00:00,yes,2026-01-01T00:10:00+00:00,yes,"Example',
    'Corp (a line break in a quoted field)"',
    "8000004,,http://phishtank.example/8000004,2026-01-01T00:00:00+00:00,yes,"
    "2026-01-01T00:10:00+00:00,yes,Other",
]

PHISHTANK_JSON = [
    "[",
    '  {"phish_id": 9000001, "url": "http://Verify.Example-Pay.COM/login", "target": "Other",',
    '   "details": [{"ip_address": "192.0.2.1", "cidr_block": "192.0.2.0/24"}]},',
    '  {"phish_id": 9000002, "url": "http:\\/\\/escaped.example.net\\/a\\u0062c", "target": "Other"},',
    "",
    '  {"phish_id": 9000003, "target": "an object without a url"},',
    '  {"phish_id": 9000004, "url": "https://last.example.org/x?y=1"}',
    "]",
]

WILDCARD = [
    "# Title: wildcard domains (generated)",
    "",
    "*.Tracker.Example.COM",
    "*.ads.example.net  # trailing comment",
    "bare.example.org",
    "*.*.bad.example",
    "*.deep.sub.example.io",
]

CSV_BY_NAME = [
    "# exported blocklist (generated)",
    "",
    "Comment,URL,first_seen",
    'plain,http://csv.example.com/Path,2026-01-01',
    '"comma, inside","http://quoted.example.net/a,b",2026-01-02',
    '"he said ""hi""",Bare-Domain.Example.ORG,2026-01-03',
    'bro"ken,http://oops.example.com/,2026-01-04',
]

CSV_BY_NUMBER = [
    "# no header: --column 2",
    "x;1,http://numbered.example.com/a",
    '"y",numbered2.example.net',
    "z",
]

FIXTURES = [
    Feed("adblock.txt", "adblock", "ads", ADBLOCK,
         blocked={
             "http://ads.example.com/x.js": ("ads", "ads.example.com/"),
             "http://www.ads.example.com/": ("ads", "ads.example.com/"),
             "https://metrics.example.io/a?b=1": ("ads", "metrics.example.io/"),
             "http://static.cdn.example.info/": ("ads", "cdn.example.info/"),
         },
         safe=["http://example.com/", "http://tracker.example.net/", "http://example.org/banner/1",
               "http://notads.example.com/", "http://pixel.a.example.edu/"],
         bad=(_line_of(ADBLOCK, "exa%mple"), "not a host name"),
         skipped={"exception (@@)": 1, "with $options": 1, "with a path": 1,
                  "other rule (cosmetic, regex, wildcard, ...)": 3}),
    Feed("dnsmasq.conf", "dnsmasq", "malware", DNSMASQ,
         blocked={
             "http://malware.example.net/a": ("malware", "malware.example.net/"),
             "http://x.phish.example.org/": ("malware", "phish.example.org/"),
             "http://bad.example.io/": ("malware", "bad.example.io/"),
             "https://c2.example.com/gate.php": ("malware", "c2.example.com/"),
             "http://drop.example.edu/": ("malware", "drop.example.edu/"),
             "http://v6.example.info/": ("malware", "v6.example.info/"),
         },
         safe=["http://corp.example.com/", "http://example.net/", "http://notmalware.example.net/"],
         bad=(_line_of(DNSMASQ, "missing-slashes"), "address= needs /DOMAIN/"),
         skipped={"non-blocking": 1, "other option": 1}),
    Feed("unbound.conf", "unbound", "malware", UNBOUND,
         blocked={
             "http://evil.example.com/": ("malware", "evil.example.com/"),
             "http://a.b.refused.example.net/x": ("malware", "refused.example.net/"),
             "http://static.example.org/": ("malware", "static.example.org/"),
             "http://host.example.io/index.html": ("malware", "host.example.io/"),
         },
         safe=["http://allowed.example.com/", "http://example.com/", "http://typo.example.com/"],
         bad=(_line_of(UNBOUND, "nxdomainn"), "unknown local-zone type 'nxdomainn'"),
         skipped={"non-blocking": 1, "other option": 1}),
    Feed("policy.rpz", "rpz", "phishing", RPZ,
         blocked={
             "http://phish.example.com/login": ("phishing", "phish.example.com/"),
             "http://www.wild.example.net/": ("phishing", "wild.example.net/"),
             "http://drop.example.org/": ("phishing", "drop.example.org/"),
             "http://absolute.example.io/": ("phishing", "absolute.example.io/"),
             "http://walled.example.edu/": ("phishing", "walled.example.edu/"),
         },
         safe=["http://allowed.example.com/", "http://example.com/", "http://rpz.example/",
               "http://broken.example.org/"],
         bad=(_line_of(RPZ, "broken.example.org"), "CNAME without a target"),
         skipped={"passthru": 1, "SOA, NS or other record": 2, "IP or name-server trigger": 1}),
    Feed("urlhaus.csv", "urlhaus", "malware", URLHAUS,
         blocked={
             "http://198.51.100.7/bins/Mozi.m": ("malware", "198.51.100.7/bins/Mozi.m"),
             "http://payload.example.net/Drop/Loader.EXE":
                 ("malware", "payload.example.net/Drop/Loader.EXE"),
             "http://files.example.org/a,b.zip": ("malware", "files.example.org/a,b.zip"),
             "http://unquoted.example.com/x.sh": ("malware", "unquoted.example.com/x.sh"),
         },
         safe=["http://payload.example.net/", "http://payload.example.net/Drop/loader.exe",
               "http://files.example.org/a", "http://broken.example.com/"],
         bad=(_line_of(URLHAUS, "1000005"), "follows a closing quote")),
    Feed("phishtank.csv", "phishtank", "phishing", PHISHTANK_CSV,
         blocked={
             "https://login.example-bank.com/signin?acct=1":
                 ("phishing", "login.example-bank.com/signin?acct=1"),
             "http://secure.example.net/update,account/":
                 ("phishing", "secure.example.net/update,account/"),
             "http://secure.example.net/update,account/x.html":
                 ("phishing", "secure.example.net/update,account/"),
             "http://multi.example.org/verify": ("phishing", "multi.example.org/verify"),
         },
         safe=["https://login.example-bank.com/signin?acct=2", "http://secure.example.net/",
               "http://phishtank.example/8000001"],
         bad=(_line_of(PHISHTANK_CSV, "8000004"), "field 2 (the URL) is empty")),
    Feed("phishtank.json", "phishtank", "phishing", PHISHTANK_JSON,
         blocked={
             "http://verify.example-pay.com/login": ("phishing", "verify.example-pay.com/login"),
             "http://escaped.example.net/abc": ("phishing", "escaped.example.net/abc"),
             "https://last.example.org/x?y=1": ("phishing", "last.example.org/x?y=1"),
         },
         safe=["http://verify.example-pay.com/", "https://last.example.org/x?y=2"],
         bad=(_line_of(PHISHTANK_JSON, "9000003"), 'an object without a "url" string')),
    Feed("wildcard.txt", "wildcard", "ads", WILDCARD,
         blocked={
             "http://tracker.example.com/": ("ads", "tracker.example.com/"),
             "http://www.tracker.example.com/x.js": ("ads", "tracker.example.com/"),
             "https://a.b.ads.example.net/p?q=1": ("ads", "ads.example.net/"),
             "http://bare.example.org/": ("ads", "bare.example.org/"),
             "http://x.deep.sub.example.io/": ("ads", "deep.sub.example.io/"),
         },
         safe=["http://example.com/", "http://nottracker.example.com/", "http://example.net/",
               "http://sub.example.io/", "http://bad.example/"],
         bad=(_line_of(WILDCARD, "*.*.bad"), "a wildcard is one leading '*.'")),
    Feed("export.csv", "csv", "scam", CSV_BY_NAME, column="url", detected=False,
         blocked={
             "http://csv.example.com/Path": ("scam", "csv.example.com/Path"),
             "http://quoted.example.net/a,b": ("scam", "quoted.example.net/a,b"),
             "http://www.bare-domain.example.org/x": ("scam", "bare-domain.example.org/"),
         },
         safe=["http://csv.example.com/path", "http://oops.example.com/", "http://example.org/"],
         bad=(_line_of(CSV_BY_NAME, "bro\"ken"), "a quote inside an unquoted field")),
    Feed("numbered.csv", "csv", "scam", CSV_BY_NUMBER, column="2", detected=False,
         blocked={
             "http://numbered.example.com/a": ("scam", "numbered.example.com/a"),
             "http://numbered2.example.net/": ("scam", "numbered2.example.net/"),
         },
         safe=["http://numbered.example.com/"],
         bad=(_line_of(CSV_BY_NUMBER, "z"), "the record has 1 field; the URL is field 2")),
]


def write_all(d):
    """Write every fixture into d; sets each Feed's path. Returns FIXTURES."""
    os.makedirs(d, exist_ok=True)
    for f in FIXTURES:
        f.path = os.path.join(d, f.name)
        with open(f.path, "w", encoding="utf-8", newline="") as out:
            out.write(f.text())
    return FIXTURES

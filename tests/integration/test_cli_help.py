#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl's manners: every command and subcommand answers --help with its
usage on stdout and exit status 0 (without a daemon), refuses an unknown
option with its usage on stderr and exit status 2, and every option of its
option table (breachctl --list-options COMMAND..., which prints the table)
is in the top-level help under that command and in that command's section
of breachctl(1). A checker run on a copy of the man page with one option
taken out proves that the comparison can fail. The other programs (breachd,
breachd-squid-helper, the hooks check-password, samba-check-password and
samba-audit) answer --help in one style: "Usage: NAME ..." on stdout, exit
status 0, a description, every option of the usage line explained on an
indented line, -h/--help among them, "Exit status:" and a closing "See ..."
line naming a man page or a document; an unknown option is the usage on
stderr and exit status 2.

Adding a command or subcommand is one line in COMMANDS below (its words and
the breachctl(1) section that documents its options). Standard library
only; dtest.py is the harness (no daemon is started).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

# (breachctl arguments naming the command, its section in breachctl(1)).
COMMANDS = [
    ("password", "CHECKING PASSWORDS AND URLS"),
    ("sha1", "CHECKING PASSWORDS AND URLS"),
    ("nt", "CHECKING PASSWORDS AND URLS"),
    ("url", "CHECKING PASSWORDS AND URLS"),
    ("ping", "CHECKING PASSWORDS AND URLS"),
    ("stats", "CHECKING PASSWORDS AND URLS"),
    ("reload", "CHECKING PASSWORDS AND URLS"),
    ("filter", "FILTER FILES"),
    ("filter build", "FILTER FILES"),
    ("filter build --kind url-sha256", "FILTER FILES"),
    ("filter add", "FILTER FILES"),
    ("filter info", "FILTER FILES"),
    ("filter verify", "FILTER FILES"),
    ("filter query", "FILTER FILES"),
    ("filter build --merge", "FILTER FILES"),
    ("filter sign", "SIGNED FILTERS"),
    ("filter fetch", "SIGNED FILTERS"),
    ("filter rollback", "SIGNED FILTERS"),
    ("key", "SIGNED FILTERS"),
    ("key generate", "SIGNED FILTERS"),
    ("url-canon", "URL CANONICALIZATION"),
    ("url-expressions", "URL CANONICALIZATION"),
    ("download", "DOWNLOADING THE CORPUS"),
    ("audit", "AUDITING ACCOUNTS"),
    ("health", "HEALTH CHECKS"),
    ("dns", "DNS"),
    ("filter export", "DNS"),
]
GLOBAL_SECTION = "OPTIONS"  # breachctl(1): the options before the command


def ctl(*args):
    """breachctl with a socket that does not exist: --help needs no daemon."""
    env = {"BREACHD_SOCKET": os.path.join(dtest.ROOT, "no-such.sock")}
    return subprocess.run([dtest.ARGS.breachctl] + list(args), env=dtest.base_env(env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)


def words(cmd):
    """The command's words, without the options that select a form of it."""
    return cmd.split(" --")[0]


_LISTED = {}


def list_options(args):
    key = tuple(args)
    if key not in _LISTED:
        _LISTED[key] = _list_options(args)
    return _LISTED[key]


def _list_options(args):
    r = ctl("--list-options", *args)
    eq(r.returncode, 0, "breachctl --list-options %s: exit status (%s)" % (
        " ".join(args), r.stderr.strip()))
    opts = r.stdout.split()
    check(opts and all(re.fullmatch(r"--[a-z0-9][a-z0-9-]*", o) for o in opts),
          "breachctl --list-options %s: not a list of options: %r" % (" ".join(args), r.stdout))
    return opts


def global_options():
    return set(list_options([]))


def command_options(cmd):
    """The long options of cmd's table, without the global ones."""
    return [o for o in list_options(cmd.split()) if o not in global_options()]


# ---- breachctl(1) -------------------------------------------------------------

def unroff(text):
    """Man page source to plain text, enough to find option names."""
    text = text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
    text = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", text)
    return re.sub(r"\\\(..", "", text)


def man_sections(text):
    """{section title: its text} of a man page source."""
    out = {}
    title = None
    for line in text.splitlines():
        m = re.match(r'\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            title = m.group(1).strip()
            out[title] = ""
        elif title:
            out[title] += unroff(line) + "\n"
    return out


def options_in(text):
    return set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", text))


def man_missing(page, section, opts):
    """The options of opts that the section of the page does not name."""
    sections = man_sections(page)
    check(section in sections, "breachctl(1) has no section %r" % section)
    there = options_in(sections[section])
    return [o for o in opts if o not in there]


def man_page():
    with open(os.path.join(dtest.ARGS.source_root, "docs", "breachctl.1")) as f:
        return f.read()


# ---- the top-level help -------------------------------------------------------

def help_blocks(text):
    """[(names, text)] of the command forms in breachctl --help: a line
    "  NAME [| NAME...] SYNOPSIS" and the lines indented deeper under it."""
    blocks = []
    cur = None
    for line in text.splitlines():
        m = re.match(r"  ([a-z][a-z0-9-]*(?: (?:\| )?[a-z][a-z0-9-]*)*)", line)
        if m and not line.startswith("   "):
            cur = [[n.strip() for n in m.group(1).split("|")], line]
            blocks.append(cur)
        elif cur is not None and line.startswith("   "):
            cur[1] += "\n" + line
        else:
            cur = None
    return blocks


def help_text_of(blocks, cmd):
    name = words(cmd)
    return "\n".join(t for names, t in blocks
                     if any(n == name or n.startswith(name + " ") for n in names))


# ---- tests ----------------------------------------------------------------------

@test
def every_command_answers_help(ctx):
    for cmd in COMMANDS:
        args = cmd[0].split()
        for flag in ("--help", "-h"):
            r = ctl(*(args + [flag]))
            eq(r.returncode, 0, "breachctl %s %s: exit status (%s)" % (cmd[0], flag, r.stderr))
            eq(r.stderr, "", "breachctl %s %s: stderr" % (cmd[0], flag))
            check(r.stdout.startswith("Usage: breachctl " + words(cmd[0])),
                  "breachctl %s %s: no usage on stdout: %r" % (cmd[0], flag, r.stdout[:200]))
        missing = [o for o in command_options(cmd[0]) if o not in options_in(r.stdout)]
        check(not missing, "breachctl %s --help does not show %s" % (cmd[0], ", ".join(missing)))
    r = ctl("--help")
    eq((r.returncode, r.stderr), (0, ""), "breachctl --help")
    check(r.stdout.startswith("Usage: breachctl "), "top-level usage: %r" % r.stdout[:200])


@test
def unknown_option_refused_with_usage(ctx):
    for cmd, _ in COMMANDS + [("", None)]:
        r = ctl(*(cmd.split() + ["--no-such-option"]))
        if cmd == "health":  # the monitoring-plugins convention: UNKNOWN, one status line
            eq((r.returncode, r.stdout.split(" - ")[0]), (3, "BREACHD UNKNOWN"),
               "breachctl health --no-such-option: exit status and stdout")
        else:
            eq(r.returncode, 2, "breachctl %s --no-such-option: exit status" % cmd)
            eq(r.stdout, "", "breachctl %s --no-such-option: stdout" % cmd)
        check("no-such-option" in r.stderr and "Usage: breachctl" in r.stderr,
              "breachctl %s --no-such-option: stderr should name it and show the usage: %r"
              % (cmd, r.stderr[:300]))


@test
def top_level_help_lists_every_option(ctx):
    text = ctl("--help").stdout
    blocks = help_blocks(text)
    for cmd, _ in COMMANDS:
        opts = command_options(cmd)
        shown = options_in(help_text_of(blocks, cmd))
        missing = [o for o in opts if o not in shown]
        check(not missing, "breachctl --help: %s does not show %s" % (cmd, ", ".join(missing)))
    glob = text.split("\nOptions:\n", 1)
    check(len(glob) == 2, "breachctl --help has no Options: part")
    missing = [o for o in global_options() if o not in options_in(glob[1])]
    check(not missing, "breachctl --help: Options: does not show %s" % ", ".join(missing))


@test
def man_page_lists_every_option(ctx):
    page = man_page()
    problems = []
    for cmd, section in COMMANDS:
        missing = man_missing(page, section, command_options(cmd))
        if missing:
            problems.append("%s: breachctl %s's %s" % (section, cmd, ", ".join(missing)))
    missing = man_missing(page, GLOBAL_SECTION, sorted(global_options()))
    if missing:
        problems.append("%s: %s" % (GLOBAL_SECTION, ", ".join(missing)))
    check(not problems, "missing from breachctl(1): " + "; ".join(problems))


@test
def checker_finds_an_option_missing_from_the_page(ctx):
    page = man_page()
    eq(man_missing(page, "FILTER FILES", ["--memory"]), [], "--memory on the real page")
    cut = re.sub(r"^.*\\-\\-memory.*\n", "", page, flags=re.M)
    check(cut != page, "the test's copy of the page should lose --memory")
    eq(man_missing(cut, "FILTER FILES", command_options("filter build")), ["--memory"],
       "options the checker finds missing from a page without --memory")


def other_programs():
    """(name, argv) of every program besides breachctl that has a --help."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(dtest.ARGS.breachctl))))
    hooks = os.path.join(dtest.ARGS.source_root, "data", "hooks")
    out = [("breachd", [dtest.ARGS.breachd])]
    helper = os.path.join(build, "client", "squid", "breachd-squid-helper")
    if os.path.exists(helper):
        out.append(("breachd-squid-helper", [helper]))
    for name in ("check-password", "samba-check-password", "samba-audit"):
        out.append((name, [os.path.join(hooks, name)]))
    return out


def run_help(argv, *args):
    env = dtest.base_env({"BREACHCTL": dtest.ARGS.breachctl,
                          "BREACHD_SOCKET": os.path.join(dtest.ROOT, "no-such.sock")})
    return subprocess.run(argv + list(args), env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30)


@test
def every_program_helps_in_one_style(ctx):
    for name, argv in other_programs():
        for opt in ("--help", "-h"):
            r = run_help(argv, opt)
            eq((r.returncode, r.stderr), (0, ""), "%s %s" % (name, opt))
            lines = r.stdout.splitlines()
            check(lines and lines[0].startswith("Usage: %s [" % name),
                  "%s %s: the first line: %r" % (name, opt, lines[:1]))
            usage = []
            for ln in lines:
                if not ln.strip():
                    break
                usage.append(ln)
            body = lines[len(usage):]
            check(any(ln.strip() and not ln.startswith(" ") for ln in body[:3]),
                  "%s: no description after the usage: %r" % (name, body[:3]))
            for o in sorted(set(re.findall(r"--[a-z][a-z-]*", " ".join(usage)))):
                check(any(re.match(r"\s+(-\w, )?%s\b" % re.escape(o), ln) for ln in body),
                      "%s --help: %s is not explained on an option line" % (name, o))
            check(any(re.match(r"\s+-h, --help\b", ln) for ln in body),
                  "%s --help: no '-h, --help' line" % name)
            check(any(ln.startswith("Exit status") for ln in body),
                  "%s --help: no 'Exit status' line" % name)
            # the last sentence: "See PAGE(N)" or "See docs/FILE" (it may wrap)
            last = " ".join(body).rsplit("See ", 1)[-1]
            check("See " in " ".join(body) and "." in last and
                  re.search(r"(\(\d\)|docs/)", last) and not last.split(".")[-1].strip(),
                  "%s --help does not end with a See line: %r" % (name, body[-3:]))
        r = run_help(argv, "--no-such-option")
        eq(r.returncode, 2, "%s --no-such-option" % name)
        check("Usage: %s [" % name in r.stderr, "%s: usage on stderr: %r" % (name, r.stderr))


if __name__ == "__main__":
    dtest.main()

/* SPDX-License-Identifier: MIT */
/* breachctl password | sha1 | nt | url | ping | stats | reload: the daemon's
 * checks from the command line and from hooks. Passwords are hashed here
 * (SHA-1, or NT with password --ntlm) and never echoed, printed or sent. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breachctl.h"
#include "check_banned.h"
#include "check_similar.h"
#include "ctl_hash.h"
#include "ctl_io.h"
#include "ctl_opts.h"
#include "ctl_tty.h"
#include "proto/client.h"
#include "core/hash.h"
#include "url/url_secret.h"
#include "core/util.h"

#define CHUNK CTL_SIMILAR_CHUNK /* requests per pipelined batch */

#define TIMEOUT_MS 10000       /* no progress for this long: give up */
#define BULK_TIMEOUT_MS 600000 /* the same on the bulk lane, which may wait for its turn */

typedef struct check_opts {
    bool quiet;
    bool json;
    bool ntlm;       /* password: NT hashes, the NT verb ([ntlm]) */
    bool print_hash; /* password: print the hashes, ask nothing (ctl_hash.h) */
    bool bulk;       /* --bulk: the daemon's bulk lane (docs/protocol.md, LANE) */
    int timeout_ms;
    ctl_similar similar; /* password: --similar, --similar-min-count */
    ctl_banned banned;   /* password: --banned, --user, --full-name */
    bool user_fields;    /* password: --user-fields (NAME:FULL NAME:PASSWORD lines) */
} check_opts;

/* The rule for several inputs (breachctl(1), EXIT STATUS): the first that applies of 2, 1, 3, 0. */
typedef struct status_acc {
    bool error, hit, unknown;
} status_acc;

static int status_of(const status_acc *s)
{
    return s->error ? EXIT_ERROR : s->hit ? EXIT_PWNED : s->unknown ? EXIT_UNKNOWN : EXIT_CLEAN;
}

/* Print one answer (input number idx, 1-based) and fold it into the status. */
static void report(const check_opts *o, size_t idx, const br_answer *a, status_acc *st)
{
    if (ctl_banned_answer(a)) {
        st->hit = st->hit || o->banned.mode == CTL_BANNED_REJECT;
        if (o->json && !o->quiet)
            printf("{\"input\":%zu,\"status\":\"BANNED\",\"kind\":\"%s\"}\n", idx, a->detail + 7);
        else if (!o->quiet)
            printf("%s\n", a->detail);
        return;
    }
    if (ctl_similar_answer(a)) {
        st->hit = st->hit || o->similar.mode == CTL_SIMILAR_REJECT;
        if (o->json && !o->quiet)
            printf("{\"input\":%zu,\"status\":\"SIMILAR\",\"count\":%" PRIu64 "}\n", idx, a->count);
        else if (!o->quiet)
            printf("SIMILAR %" PRIu64 "\n", a->count);
        return;
    }
    switch (a->kind) {
    case BR_ANSWER_PWNED:
    case BR_ANSWER_BLOCKED:
        st->hit = true;
        break;
    case BR_ANSWER_UNKNOWN:
        st->unknown = true;
        break;
    case BR_ANSWER_CLEAN:
    case BR_ANSWER_SAFE:
        break;
    default:
        st->error = true;
        break;
    }
    if (o->quiet)
        return;
    if (o->json) {
        printf("{\"input\":%zu,\"status\":\"%s\"", idx, br_answer_kind_name(a->kind));
        if (a->kind == BR_ANSWER_PWNED)
            printf(",\"count\":%" PRIu64, a->count);
        if (a->kind == BR_ANSWER_BLOCKED) {
            printf(",\"category\":");
            ctl_json_string(stdout, a->category);
            printf(",\"expression\":");
            ctl_json_string(stdout, a->detail);
        }
        if (a->kind == BR_ANSWER_UNKNOWN || a->kind == BR_ANSWER_ERROR) {
            printf(",\"reason\":");
            ctl_json_string(stdout, a->detail);
        }
        printf("}\n");
        return;
    }
    switch (a->kind) {
    case BR_ANSWER_PWNED:
        printf("PWNED %" PRIu64 "\n", a->count);
        break;
    case BR_ANSWER_BLOCKED:
        printf("BLOCKED %s %s\n", a->category, a->detail);
        break;
    case BR_ANSWER_CLEAN:
    case BR_ANSWER_SAFE:
        printf("%s\n", br_answer_kind_name(a->kind));
        break;
    default:
        printf("%s %s\n", br_answer_kind_name(a->kind), a->detail);
        break;
    }
}

static int connect_or_fail(const ctl_globals *g, const check_opts *o, br_client **c)
{
    br_error err = {{0}};
    int r = br_client_connect(g->socket_path, o->timeout_ms, c, &err);
    if (r == 0 && o->bulk)
        r = br_client_set_lane(*c, BR_LANE_BULK, &err);
    if (r < 0) {
        ctl_err("%s", err.text);
        return EXIT_ERROR;
    }
    return 0;
}

/* The connection, and why it failed once it did: the inputs after a failure
 * are still answered, with ERR and that reason, so that output line N is
 * always input N's. */
typedef struct session {
    br_client *c;
    bool failed;
    char why[512];
    ctl_similar *sim;         /* password: open, or NULL */
    ctl_similar_chunk *plain; /* with sim: the chunk's passwords */
    const ctl_banned *ban;    /* password: open, or NULL */
    /* with ban or --user-fields: each of the chunk's answers made here
     * (BANNED; ERR for a line that is not NAME:FULL NAME:PASSWORD), kind
     * NONE when none */
    br_answer *banned;
    bool user_fields;
} session;

static void session_fail(session *s, const br_error *err)
{
    s->failed = true;
    snprintf(s->why, sizeof(s->why), "%s", err->text);
    ctl_err("%s", err->text);
}

/* After password i's exact answer a: its variants, one password at a time
 * (the chunk's exact checks went pipelined). A failure of that exchange is
 * the session's. Under --similar=reject, this and every later answer that
 * needed the check then says ERR and why, never an unchecked CLEAN; under
 * warn (the default), the exact answer stands, as it does when the daemon
 * has no filter to ask. */
static void similar_of_chunk(session *s, size_t i, br_answer *a)
{
    if (!s->plain || !s->sim->sim || (a->kind != BR_ANSWER_CLEAN && a->kind != BR_ANSWER_UNKNOWN))
        return;
    br_error err = {{0}};
    if (!s->failed &&
        ctl_similar_apply(s->sim, s->c, s->plain->text[i], s->plain->len[i], a, &err) < 0)
        session_fail(s, &err);
    if (s->failed && s->sim->mode == CTL_SIMILAR_REJECT) {
        a->kind = BR_ANSWER_ERROR;
        snprintf(a->detail, sizeof(a->detail), "%s", s->why);
    }
}

/* Whether input i of the chunk is answered here and not sent: refused for
 * a banned term under reject, or a line --user-fields cannot split. */
static bool answered_here(const session *s, size_t i)
{
    if (!s->banned)
        return false;
    return s->banned[i].kind == BR_ANSWER_ERROR ||
           (s->ban && s->ban->mode == CTL_BANNED_REJECT && s->banned[i].kind != BR_ANSWER_NONE);
}

/* The chunk's requests but those answered here (nothing about them is
 * sent), pipelined; their answers put back. */
static void send_chunk(session *s, br_client_request *reqs, size_t n)
{
    static br_client_request sendq[CHUNK];
    size_t k = 0, j = 0;
    br_error err = {{0}};
    for (size_t i = 0; i < n; i++)
        if (!answered_here(s, i))
            sendq[k++] = reqs[i];
    if (!s->failed && k && br_client_batch(s->c, sendq, k, CHUNK, &err) < 0)
        session_fail(s, &err);
    for (size_t i = 0; i < n; i++)
        reqs[i].answer = answered_here(s, i) ? s->banned[i] : sendq[j++].answer;
    br_wipe(sendq, k * sizeof(sendq[0]));
}

/* Under --banned=warn, a CLEAN or UNKNOWN answer of a password made of
 * banned terms says BANNED instead. */
static void banned_warn(const session *s, size_t i, br_answer *a)
{
    if (s->ban && s->banned[i].kind == BR_ANSWER_OTHER &&
        (a->kind == BR_ANSWER_CLEAN || a->kind == BR_ANSWER_UNKNOWN))
        *a = s->banned[i];
}

/* Send a chunk, print its answers in input order. */
static void run_chunk(session *s, br_client_request *reqs, size_t n, size_t first,
                      const check_opts *o, status_acc *st)
{
    send_chunk(s, reqs, n);
    for (size_t i = 0; i < n; i++) {
        similar_of_chunk(s, i, &reqs[i].answer);
        banned_warn(s, i, &reqs[i].answer);
        if (s->failed && reqs[i].answer.kind == BR_ANSWER_NONE) {
            reqs[i].answer.kind = BR_ANSWER_ERROR;
            snprintf(reqs[i].answer.detail, sizeof(reqs[i].answer.detail), "%s", s->why);
        }
        report(o, first + i, &reqs[i].answer, st);
    }
    fflush(stdout);
}

/* ---- url ---- */

/* A URL whose every lookup expression holds an e-mail address (url_secret.h)
 * is not sent: a stand-in that the daemon refuses as secret-class takes its
 * place, so that output line N stays input N's. */
#define URL_SECRET_STANDIN "mailto:-"

static bool url_all_secret(size_t idx, const char *url, size_t len)
{
    br_url_exprs ex = {0};
    if (br_url_lookup_expressions(url, len, BR_URL_SB_HOST_COMPONENTS, &ex, NULL, NULL) == -EPERM) {
        ctl_err("url: URL %zu holds an e-mail address in every lookup expression: not checked "
                "(secret-class)",
                idx);
        return true;
    }
    br_url_exprs_clear(&ex);
    return false;
}

static br_client_request url_request(size_t idx, const char *url)
{
    size_t len = strlen(url);
    if (url_all_secret(idx, url, len))
        return (br_client_request){
            .kind = BR_REQ_URL, .arg = URL_SECRET_STANDIN, .arg_len = strlen(URL_SECRET_STANDIN)};
    return (br_client_request){.kind = BR_REQ_URL, .arg = url, .arg_len = len};
}

/* ---- password ---- */

/* stdin's buffer holds the passwords read: ours, so that it can be wiped. */
static char stdin_buf[65536];

typedef enum stdin_kind { IN_PASSWORD, IN_SHA1, IN_URL, IN_PASSWORD_NT, IN_NT } stdin_kind;

/* A hex hash argument as a request: decoded when it has the kind's length,
 * else a stand-in that is not sent (the text might be a password) and that
 * the daemon answers with ERR bad-request. */
static br_client_request hex_request(bool nt, const char *s, size_t len, uint8_t *hash)
{
    size_t hl = nt ? BR_NT_LEN : BR_SHA1_LEN;
    if (len == 2 * hl && br_hex_decode(s, hl, hash))
        return (br_client_request){
            .kind = nt ? BR_REQ_NT : BR_REQ_SHA1, .arg = hash, .arg_len = hl};
    return (br_client_request){.kind = BR_REQ_RAW, .arg = nt ? "NT -" : "PW -", .arg_len = 4};
}

/* One input line as a request: a password hashed, a SHA-1 or NT hash
 * decoded, a URL copied (freed by the caller after its chunk). 0 or a
 * negative errno (out of memory, no MD4). */
static int line_request(stdin_kind kind, size_t idx, const char *line, size_t len,
                        uint8_t hash[BR_SHA1_LEN], br_client_request *req)
{
    if (kind == IN_PASSWORD) {
        br_client_hash_password(line, len, hash);
        *req = (br_client_request){.kind = BR_REQ_SHA1, .arg = hash, .arg_len = BR_SHA1_LEN};
    } else if (kind == IN_PASSWORD_NT) {
        int r = br_client_hash_password_nt(line, len, hash);
        if (r < 0)
            return r;
        *req = (br_client_request){.kind = BR_REQ_NT, .arg = hash, .arg_len = BR_NT_LEN};
    } else if (kind == IN_NT) {
        *req = hex_request(true, line, len, hash);
    } else if (kind == IN_SHA1) {
        *req = hex_request(false, line, len, hash);
    } else {
        if (url_all_secret(idx, line, len)) {
            line = URL_SECRET_STANDIN;
            len = strlen(URL_SECRET_STANDIN);
        }
        char *copy = strndup(line, len);
        if (!copy)
            return -ENOMEM;
        *req = (br_client_request){.kind = BR_REQ_URL, .arg = copy, .arg_len = len};
    }
    return 0;
}

/* Input n's check against the banned terms, made here; with
 * --user-fields, its names and password split off the line (*pw, *len:
 * the password), or an ERR answer for a line that does not split. */
static void banned_of_line(session *s, size_t n, const char **pw, size_t *len)
{
    ctl_user_fields f;
    if (!s->banned)
        return;
    s->banned[n].kind = BR_ANSWER_NONE;
    if (!s->user_fields) {
        if (s->ban && !ctl_banned_check(s->ban, *pw, *len, &s->banned[n]))
            s->banned[n].kind = BR_ANSWER_NONE;
        return;
    }
    if (!ctl_user_fields_split(*pw, *len, &f)) {
        s->banned[n].kind = BR_ANSWER_ERROR;
        snprintf(s->banned[n].detail, sizeof(s->banned[n].detail),
                 "bad-request --user-fields: a line is NAME:FULL NAME:PASSWORD");
        return;
    }
    *pw = f.pw;
    *len = f.pw_len;
    if (s->ban && !ctl_banned_check_names(s->ban, f.user, f.user_len, f.full, f.full_len, f.pw,
                                          f.pw_len, &s->banned[n]))
        s->banned[n].kind = BR_ANSWER_NONE;
}

static void chunk_done(session *s, stdin_kind kind, br_client_request *reqs, size_t n)
{
    ctl_similar_chunk_wipe(s->plain);
    if (kind != IN_URL)
        return;
    for (size_t i = 0; i < n; i++) {
        char *u = (char *)reqs[i].arg;
        br_wipe(u, reqs[i].arg_len);
        free(u);
    }
}

/* Inputs one per line on stdin (passwords, SHA-1 hashes or URLs), in
 * pipelined chunks; every buffer that held one is wiped. */
static int check_stdin(session *s, const check_opts *o, status_acc *st, stdin_kind kind,
                       const char *cmd)
{
    setvbuf(stdin, stdin_buf, _IOFBF, sizeof(stdin_buf));
    uint8_t(*hashes)[BR_SHA1_LEN] = calloc(CHUNK, BR_SHA1_LEN);
    br_client_request *reqs = calloc(CHUNK, sizeof(*reqs));
    char *line = NULL;
    size_t cap = 0, n = 0, done = 0;
    ssize_t len = 0;
    int failed = !hashes || !reqs ? -ENOMEM : 0;
    bool oom = failed < 0;
    while (!oom && (len = ctl_read_line_wiped(stdin, &line, &cap)) >= 0) {
        const char *pw = line;
        size_t pw_len = (size_t)len;
        banned_of_line(s, n, &pw, &pw_len);
        failed = line_request(kind, done + n + 1, pw, pw_len, hashes[n], &reqs[n]);
        if (!failed)
            failed = ctl_similar_keep(s->plain, n, pw, pw_len);
        br_wipe(line, cap);
        oom = failed < 0;
        if (oom)
            break;
        if (++n == CHUNK) {
            run_chunk(s, reqs, n, done + 1, o, st);
            chunk_done(s, kind, reqs, n);
            done += n;
            n = 0;
        }
    }
    oom = oom || len == -2;
    bool read_error = ferror(stdin);
    if (n && !oom)
        run_chunk(s, reqs, n, done + 1, o, st);
    if (reqs)
        chunk_done(s, kind, reqs, n);
    done += n;
    if (line) {
        br_wipe(line, cap);
        free(line);
    }
    if (hashes)
        br_wipe(hashes, CHUNK * BR_SHA1_LEN);
    br_wipe(stdin_buf, sizeof(stdin_buf));
    free(hashes);
    free(reqs);
    if (oom && failed < 0 && failed != -ENOMEM) {
        ctl_err("%s: hashing a password failed: %s", cmd, strerror(-failed));
        st->error = true;
    } else if (oom) {
        ctl_err("%s: out of memory", cmd);
        st->error = true;
    } else if (read_error) {
        ctl_err("%s: reading standard input: %s", cmd, strerror(errno));
        st->error = true;
    } else if (done == 0) {
        /* Nothing was checked: never report that as clean. */
        ctl_err("%s: no %s on standard input (one per line)", cmd,
                kind == IN_PASSWORD || kind == IN_PASSWORD_NT ? "password"
                : kind == IN_SHA1                             ? "40-hex SHA-1"
                : kind == IN_NT                               ? "32-hex NT hash"
                                                              : "URL");
        st->error = true;
    }
    return status_of(st);
}

/* ---- commands ---- */

#define CHECK_OPTS "[-q|--quiet] [-j|--json] [--timeout MS] [--socket PATH]"
#define LANE_OPT " [--bulk]"

static const ctl_usage check_usage[] = {
    {"password",
     CHECK_OPTS LANE_OPT
     " [--ntlm] [--print-hash]\n"
     "    [--similar=reject|warn|off] [--similar-min-count N]\n"
     "    [--banned=reject|warn|off] [--user NAME] [--full-name TEXT] [--user-fields]",
     "Checks passwords: typed (no echo) at the terminal, else one per line on "
     "standard input; never as arguments. --ntlm: as NT hashes (the NT corpus). "
     "--similar: also small changes of popular passwords (SIMILAR <count>; "
     "reject: exit status 1; default warn). "
     "--banned: first, the banned terms and the site's names breachd holds and the "
     "user's own names (--user, --full-name; default the invoking user and its GECOS "
     "name), matched here (BANNED <kind>; reject, the default once breachd holds "
     "terms: exit status 1 and nothing sent). "
     "--user-fields: each line on standard input is NAME:FULL NAME:PASSWORD, the "
     "names for --banned. "
     "--print-hash: print each one's SHA-1 (NT with --ntlm) instead, asking nothing."},
    {"sha1", CHECK_OPTS LANE_OPT " [HEX40...]",
     "Checks SHA-1 hashes of passwords (40 hex digits), as arguments or one per "
     "line on standard input."},
    {"nt", CHECK_OPTS LANE_OPT " [HEX32...]",
     "Checks NT hashes (MD4 of the UTF-16LE password, 32 hex digits), as arguments "
     "or one per line on standard input."},
    {"url", CHECK_OPTS LANE_OPT " [URL...]",
     "Checks URLs against the blocklists, as arguments or one per line on "
     "standard input."},
    {"ping", CHECK_OPTS, "Is breachd answering? (PONG)"},
    {"stats", CHECK_OPTS, "breachd's counters, one key=value a line (--json: one object)."},
    {"reload", CHECK_OPTS, "breachd re-reads its configuration and filters (admin_users only)."},
};

void cmd_check_summary(FILE *out)
{
    ctl_usage_summary(out, check_usage, BR_ARRAY_SIZE(check_usage));
}

static const char *usage_of; /* the command whose usage check_usage_out prints */

static void check_usage_out(FILE *out)
{
    ctl_usage_command(out, check_usage, BR_ARRAY_SIZE(check_usage), usage_of);
    fputs("--timeout: milliseconds without progress, 1 to 3600000 (default 10000; with\n"
          "--bulk, which sends the checks on the daemon's bulk lane, 600000).\n"
          "Exit status: 0 clean/safe, 1 pwned/blocked, 2 error, 3 unknown.\n",
          out);
}

/* The index of the first argument; -1 after an error, -2 when --help was
 * answered. */
static int parse_opts(int argc, char **argv, check_opts *o, const ctl_globals **g, ctl_globals *own)
{
    const char *sock = NULL;
    const ctl_opt opts[] = {
        {.name = "quiet", .short_name = 'q', .type = CTL_OPT_FLAG, .dst = &o->quiet},
        {.name = "json", .short_name = 'j', .type = CTL_OPT_FLAG, .dst = &o->json},
        CTL_FN("timeout", &o->timeout_ms, ctl_opt_timeout_ms),
        CTL_STR("socket", &sock),
        CTL_HELP,
        CTL_FLAG("bulk", &o->bulk), /* checks only */
        CTL_FLAG("ntlm", &o->ntlm), /* password only: the last eight rows */
        CTL_FLAG("print-hash", &o->print_hash),
        CTL_FN("similar", &o->similar.mode, ctl_opt_similar),
        CTL_UINT("similar-min-count", &o->similar.min_count, 1, UINT32_MAX,
                 "a count from 1 to 4294967295"),
        CTL_FN("banned", &o->banned.mode, ctl_opt_banned),
        CTL_STR("user", &o->banned.user),
        CTL_STR("full-name", &o->banned.full_name),
        CTL_FLAG("user-fields", &o->user_fields),
    };
    int first;
    usage_of = argv[0];
    bool password = strcmp(argv[0], "password") == 0;
    bool check =
        password || !strcmp(argv[0], "sha1") || !strcmp(argv[0], "nt") || !strcmp(argv[0], "url");
    size_t n = BR_ARRAY_SIZE(opts) - (password ? 0 : 8) - !check;
    int r = ctl_getopt(argv[0], opts, n, check_usage_out, argc, argv, &first);
    if (r != 0)
        return r > 0 ? -2 : -1;
    if (!o->timeout_ms)
        o->timeout_ms = o->bulk ? BULK_TIMEOUT_MS : TIMEOUT_MS;
    if (!o->similar.min_count)
        o->similar.min_count = CTL_SIMILAR_MIN_COUNT;
    o->similar.nt = o->ntlm;
    if (sock) {
        *own = **g;
        own->socket_path = sock;
        *g = own;
    }
    return first;
}

/* password, one per line on stdin: the banned-term check (banned: open)
 * and the similarity check around the pipelined chunks. */
static int check_password_stdin(br_client *c, check_opts *o, bool banned, status_acc *st)
{
    bool similar = ctl_similar_open(&o->similar);
    ctl_similar_chunk *plain = similar ? calloc(1, sizeof(*plain)) : NULL;
    bool here = banned || o->user_fields; /* answers made here */
    br_answer *ban = here ? calloc(CHUNK, sizeof(*ban)) : NULL;
    int rc = EXIT_ERROR;
    if ((similar && !plain) || (here && !ban)) {
        ctl_err("password: out of memory");
    } else {
        session s = {.c = c,
                     .sim = similar ? &o->similar : NULL,
                     .plain = plain,
                     .ban = banned ? &o->banned : NULL,
                     .banned = ban,
                     .user_fields = o->user_fields};
        rc = check_stdin(&s, o, st, o->ntlm ? IN_PASSWORD_NT : IN_PASSWORD, "password");
    }
    free(plain);
    free(ban);
    ctl_similar_close(&o->similar);
    return rc;
}

/* password: from the terminal (no echo) or one per line on stdin. */
static int check_password(const ctl_globals *g, check_opts *o, int nargs)
{
    _cleanup_(br_client_freep) br_client *c = NULL;
    status_acc st = {0};
    if (nargs) {
        ctl_err("password: takes no arguments (a password on the command line would be "
                "visible to every user); type it, or pipe one per line");
        return EXIT_ERROR;
    }
    br_error err = {{0}};
    if (o->ntlm && br_md4_check(&err) < 0) {
        ctl_err("password: --ntlm: %s", err.text);
        return EXIT_ERROR;
    }
    if (o->print_hash) {
        if (o->bulk || o->json || o->quiet) {
            ctl_err("password: --print-hash takes only --ntlm");
            return EXIT_ERROR;
        }
        return ctl_print_password_hashes(o->ntlm);
    }
    /* Connect first: a daemon that is down is reported before anyone
     * types a password. */
    if (connect_or_fail(g, o, &c))
        return EXIT_ERROR;
    bool ban_failed, banned = ctl_banned_open(&o->banned, c, &ban_failed);
    if (ban_failed)
        return EXIT_ERROR;
    if (!isatty(STDIN_FILENO)) {
        int rc = check_password_stdin(c, o, banned, &st);
        ctl_banned_close(&o->banned);
        return rc;
    }
    ctl_similar_open(&o->similar);
    char pw[1024];
    ssize_t len = ctl_tty_read_password(pw, sizeof(pw));
    if (len < 0) {
        br_wipe(pw, sizeof(pw));
        ctl_similar_close(&o->similar);
        ctl_banned_close(&o->banned);
        if (len == -ENODATA || len == -ENOMSG)
            ctl_err("password: no password given%s",
                    len == -ENOMSG ? " (an empty one is not checked)" : "");
        else if (len == -EMSGSIZE)
            ctl_err("password: longer than %zu bytes", sizeof(pw) - 2);
        else
            ctl_err("password: cannot read from the terminal: %s", strerror((int)-len));
        return EXIT_ERROR;
    }
    /* Typing may take longer than the daemon keeps an idle connection
     * open: ask on a new one. */
    br_client_free(c);
    c = NULL;
    if (connect_or_fail(g, o, &c)) {
        br_wipe(pw, sizeof(pw));
        ctl_similar_close(&o->similar);
        ctl_banned_close(&o->banned);
        return EXIT_ERROR;
    }
    br_answer a, ban;
    bool refused = banned && ctl_banned_check(&o->banned, pw, (size_t)len, &ban);
    int r = 0;
    if (!refused || o->banned.mode != CTL_BANNED_REJECT) /* a refusal sends nothing */
        r = o->ntlm ? br_client_check_password_nt(c, pw, (size_t)len, &a, &err)
                    : br_client_check_password(c, pw, (size_t)len, &a, &err);
    if (r == 0 && (!refused || o->banned.mode != CTL_BANNED_REJECT))
        r = ctl_similar_apply(&o->similar, c, pw, (size_t)len, &a, &err);
    if (refused && (o->banned.mode == CTL_BANNED_REJECT ||
                    (r == 0 && (a.kind == BR_ANSWER_CLEAN || a.kind == BR_ANSWER_UNKNOWN))))
        a = ban;
    br_wipe(pw, sizeof(pw));
    ctl_similar_close(&o->similar);
    ctl_banned_close(&o->banned);
    if (r < 0) {
        ctl_err("%s", err.text);
        return EXIT_ERROR;
    }
    report(o, 1, &a, &st);
    return status_of(&st);
}

/* sha1 / nt / url: the arguments, in chunks, or one per line on stdin. */
static int check_args(const ctl_globals *g, const check_opts *o, const char *cmd, int nargs,
                      char **args)
{
    _cleanup_(br_client_freep) br_client *c = NULL;
    status_acc st = {0};
    bool is_url = cmd[0] == 'u', is_nt = cmd[0] == 'n';
    if (!nargs && isatty(STDIN_FILENO)) {
        ctl_err("%s: expected at least one %s, as arguments or one per line on standard input", cmd,
                is_url  ? "URL"
                : is_nt ? "32-hex NT hash"
                        : "40-hex SHA-1");
        return EXIT_ERROR;
    }
    if (connect_or_fail(g, o, &c))
        return EXIT_ERROR;
    if (!nargs) {
        session s = {.c = c};
        return check_stdin(&s, o, &st, is_url ? IN_URL : is_nt ? IN_NT : IN_SHA1, cmd);
    }
    br_client_request *reqs = calloc((size_t)nargs, sizeof(*reqs));
    uint8_t(*hashes)[BR_SHA1_LEN] = calloc((size_t)nargs, BR_SHA1_LEN);
    if (!reqs || !hashes) {
        free(reqs);
        free(hashes);
        return EXIT_ERROR;
    }
    for (int i = 0; i < nargs; i++) {
        if (is_url)
            reqs[i] = url_request((size_t)i + 1, args[i]);
        else
            reqs[i] = hex_request(is_nt, args[i], strlen(args[i]), hashes[i]);
    }
    session s = {.c = c};
    for (int i = 0; i < nargs; i += CHUNK)
        run_chunk(&s, reqs + i, (size_t)BR_MIN(CHUNK, nargs - i), (size_t)i + 1, o, &st);
    free(reqs);
    br_wipe(hashes, (size_t)nargs * BR_SHA1_LEN);
    free(hashes);
    return status_of(&st);
}

/* ping | stats | reload */
static int admin_command(const ctl_globals *g, const check_opts *o, const char *cmd, int nargs)
{
    _cleanup_(br_client_freep) br_client *c = NULL;
    if (nargs) {
        ctl_err("%s: takes no arguments", cmd);
        return EXIT_ERROR;
    }
    if (connect_or_fail(g, o, &c))
        return EXIT_ERROR;
    char verb[16];
    snprintf(verb, sizeof(verb), "%s", cmd);
    for (char *p = verb; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    br_answer a;
    br_error err = {{0}};
    if (strcmp(cmd, "reload") == 0)
        br_client_set_timeout(
            c, BR_MAX(o->timeout_ms, 120000)); /* verifying a big filter takes time */
    if (br_client_command(c, verb, &a, &err) < 0) {
        ctl_err("%s", err.text);
        return EXIT_ERROR;
    }
    if (a.kind == BR_ANSWER_ERROR) { /* "CODE TEXT": "cmd: CODE: TEXT" */
        const char *sp = strchr(a.detail, ' ');
        if (sp)
            ctl_err("%s: %.*s: %s", cmd, (int)(sp - a.detail), a.detail, sp + 1);
        else
            ctl_err("%s: %s", cmd, a.detail);
        return EXIT_ERROR;
    }
    if (o->quiet)
        return 0;
    if (strcmp(cmd, "stats") == 0) {
        ctl_print_stats(stdout, a.detail + (strncmp(a.detail, "STATS ", 6) == 0 ? 6 : 0), o->json);
    } else if (o->json) {
        printf("{\"status\":");
        ctl_json_string(stdout, a.detail);
        printf("}\n");
    } else {
        printf("%s\n", a.detail);
    }
    return 0;
}

int cmd_check(const ctl_globals *g0, int argc, char **argv)
{
    check_opts o = {.timeout_ms = 0};
    const ctl_globals *g = g0;
    ctl_globals own;
    const char *cmd = argv[0];
    int first = parse_opts(argc, argv, &o, &g, &own);
    if (first < 0)
        return first == -2 ? EXIT_CLEAN : EXIT_ERROR;
    int nargs = argc - first;
    if (strcmp(cmd, "password") == 0)
        return check_password(g, &o, nargs);
    if (strcmp(cmd, "sha1") == 0 || strcmp(cmd, "nt") == 0 || strcmp(cmd, "url") == 0)
        return check_args(g, &o, cmd, nargs, argv + first);
    return admin_command(g, &o, cmd, nargs);
}

/* SPDX-License-Identifier: MIT */
/* breachctl audit: every account of a password-hash export (pwdump,
 * secretsdump, Samba's pdbedit -Lw, NAME:HASH; lib/audit/audit_input.h)
 * checked through the daemon, one line per account in input order, then a
 * summary and the groups of accounts that share a password (docs/audit.md);
 * with --html, the same as one HTML page (audit_html.c).
 *
 * Each distinct hash is asked once, pipelined (the client library's batch),
 * on the bulk lane when the daemon has one (LANE bulk; an older daemon
 * answers ERR unknown-verb and the audit goes on in the interactive lane).
 * At most WINDOW requests are in flight, so that even in the interactive
 * lane none waits behind more than WINDOW / [upstream] rate seconds of
 * fetches. Hashes are never printed; every buffer that held one is wiped. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "audit/audit_input.h"
#include "breachctl.h"
#include "proto/client.h"
#include "ctl_io.h"
#include "core/util.h"

#define CHUNK 512     /* accounts answered and printed per round */
#define WINDOW 128    /* requests in flight */
#define BUSY_ROUNDS 8 /* ERR busy answers are asked again, this often at most */
#define DETAIL 96     /* bytes kept of an UNKNOWN reason or an ERR text */

/* One distinct hash and the daemon's answer for it. */
typedef struct verdict {
    uint8_t hash[BR_SHA1_LEN];
    br_answer_kind kind; /* BR_ANSWER_NONE until answered */
    bool asked;
    uint64_t count;
    char detail[DETAIL];
} verdict;

typedef struct account {
    char *name;
    uint32_t dist; /* its verdict; unused for an empty password */
    bool empty;
    uint32_t history; /* 0: the current password; N + 1: NAME_historyN */
} account;

typedef struct audit {
    const audit_opts *o;
    account *acc;
    size_t n, cap;
    uint8_t (*hash)[BR_SHA1_LEN]; /* per account while reading, wiped after */
    verdict *v;
    size_t nv;
    uint32_t *order; /* account indexes sorted by (hash, index): the reuse groups */
    uint64_t machines, no_hash, skipped_lines;
    uint64_t skipped[BR_AUDIT_SKIP_KINDS];
    uint64_t pwned, clean, unknown, empty, errors;
    size_t n_current;                /* accounts before the old passwords */
    uint64_t history, history_pwned; /* old passwords (secretsdump -history) */
    br_audit_reader rd;
    br_client *c;
    const char *source; /* the input's name, for the HTML report */
    bool failed;
    char why[256];
} audit;

/* src into dst (size bytes), cut to fit. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- reading -------------------------------------------------------------------- */

static int add_account(audit *a, const br_audit_account *ba)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 1024;
        account *na = reallocarray(a->acc, cap, sizeof(*na));
        if (!na)
            return -ENOMEM;
        a->acc = na;
        uint8_t(*nh)[BR_SHA1_LEN] = calloc(cap, BR_SHA1_LEN);
        if (!nh)
            return -ENOMEM;
        if (a->hash) {
            memcpy(nh, a->hash, a->n * BR_SHA1_LEN);
            br_wipe(a->hash, a->cap * BR_SHA1_LEN);
            free(a->hash);
        }
        a->hash = nh;
        a->cap = cap;
    }
    char *name = strndup(ba->name, ba->name_len);
    if (!name)
        return -ENOMEM;
    a->acc[a->n] = (account){.name = name, .empty = ba->empty, .history = ba->history};
    memcpy(a->hash[a->n], ba->hash, BR_SHA1_LEN);
    a->n++;
    return 0;
}

/* One line of the input: 0, or -1 after an error naming FILE:LINE. */
static int take_line(audit *a, const char *file, uint64_t lineno, const char *line, size_t len)
{
    br_audit_account ba;
    const char *why;
    int r = br_audit_read_line(&a->rd, line, len, &ba, &why);
    if (r < 0) {
        ctl_err("audit: %s:%" PRIu64 ": %s", file, lineno, why);
        return -1;
    }
    if (r == BR_AUDIT_LINE_SKIP) {
        a->skipped_lines++;
        a->skipped[ba.skip]++;
    } else if (ba.machine && !a->o->machines) {
        a->machines++;
    } else if (r == BR_AUDIT_LINE_NO_HASH) {
        a->no_hash++;
    } else if (add_account(a, &ba) < 0) {
        ctl_err("audit: out of memory");
        r = -1;
    }
    br_wipe(&ba, sizeof(ba));
    return r < 0 ? -1 : 0;
}

/* stdin's buffer holds the input: ours, so that it can be wiped. */
static char in_buf[65536];

static int read_input(audit *a, const char *path)
{
    bool is_stdin = !path || strcmp(path, "-") == 0;
    const char *file = is_stdin ? "<stdin>" : path;
    FILE *in = is_stdin ? stdin : fopen(path, "r");
    if (!in) {
        ctl_err("audit: %s: %s", path, strerror(errno));
        return -1;
    }
    setvbuf(in, in_buf, _IOFBF, sizeof(in_buf));
    br_audit_reader_init(&a->rd, a->o->format, a->o->ntlm);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    int rc = 0;
    while ((len = ctl_read_line_wiped(in, &line, &cap)) >= 0) {
        rc = take_line(a, file, ++lineno, line, (size_t)len);
        br_wipe(line, cap);
        if (rc < 0)
            break;
    }
    if (rc == 0 && len == -2) {
        ctl_err("audit: out of memory");
        rc = -1;
    } else if (rc == 0 && ferror(in)) {
        ctl_err("audit: reading %s: %s", file, strerror(errno));
        rc = -1;
    }
    if (line) {
        br_wipe(line, cap);
        free(line);
    }
    if (!is_stdin)
        fclose(in);
    else
        clearerr(in);
    br_wipe(in_buf, sizeof(in_buf));
    return rc;
}

/* The old passwords (secretsdump -history) after the accounts, each part in
 * input order: they are reported apart. */
static int history_last(audit *a)
{
    account *acc = calloc(a->cap ? a->cap : 1, sizeof(*acc));
    uint8_t(*h)[BR_SHA1_LEN] = calloc(a->cap ? a->cap : 1, BR_SHA1_LEN);
    if (!acc || !h) {
        free(acc);
        free(h);
        return -ENOMEM;
    }
    size_t k = 0;
    for (int old = 0; old < 2; old++)
        for (size_t i = 0; i < a->n; i++)
            if ((a->acc[i].history != 0) == (old != 0)) {
                acc[k] = a->acc[i];
                memcpy(h[k++], a->hash[i], BR_SHA1_LEN);
            }
    for (size_t i = 0; i < a->n; i++)
        a->n_current += a->acc[i].history == 0;
    br_wipe(a->hash, a->cap * BR_SHA1_LEN);
    free(a->hash);
    free(a->acc);
    a->acc = acc;
    a->hash = h;
    return 0;
}

/* What was skipped of secretsdump's other sections, by kind, on stderr (the
 * report's lines stay accounts). */
static void tell_skipped(const audit *a, const char *file)
{
    char buf[256];
    size_t n = 0;
    for (int k = BR_AUDIT_SKIP_KERBEROS; k < BR_AUDIT_SKIP_KINDS; k++)
        if (a->skipped[k] && n < sizeof(buf))
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s=%" PRIu64,
                                  br_audit_skip_name((br_audit_skip)k), a->skipped[k]);
    if (n)
        ctl_err("audit: %s: skipped, not audited:%s", file, buf);
}

/* ---- distinct hashes and reuse groups ------------------------------------------- */

static const audit *sort_ctx; /* qsort has no context argument */

static int by_hash(const void *x, const void *y)
{
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    int c = memcmp(sort_ctx->hash[i], sort_ctx->hash[j], BR_SHA1_LEN);
    return c ? c : (i > j) - (i < j);
}

/* One verdict per distinct hash; a.order groups the accounts by hash. */
static int plan(audit *a)
{
    a->order = calloc(a->n ? a->n : 1, sizeof(*a->order));
    a->v = calloc(a->n ? a->n : 1, sizeof(*a->v));
    if (!a->order || !a->v)
        return -ENOMEM;
    for (size_t i = 0; i < a->n; i++)
        a->order[i] = (uint32_t)i;
    sort_ctx = a;
    qsort(a->order, a->n, sizeof(*a->order), by_hash);
    for (size_t k = 0; k < a->n; k++) {
        uint32_t i = a->order[k];
        if (a->acc[i].empty)
            continue;
        if (a->nv == 0 || memcmp(a->v[a->nv - 1].hash, a->hash[i], BR_SHA1_LEN) != 0)
            memcpy(a->v[a->nv++].hash, a->hash[i], BR_SHA1_LEN);
        a->acc[i].dist = (uint32_t)(a->nv - 1);
    }
    br_wipe(a->hash, a->cap * BR_SHA1_LEN);
    free(a->hash);
    a->hash = NULL;
    return 0;
}

/* ---- asking the daemon ---------------------------------------------------------- */

/* LANE bulk: answered OK by a daemon with a bulk lane, ERR unknown-verb by an
 * older one (the audit then goes on in the interactive lane). */
static void ask_bulk_lane(audit *a)
{
    br_answer *ans = malloc(sizeof(*ans));
    br_error err = {{0}};
    if (!ans)
        return;
    int r = br_client_command(a->c, "LANE bulk", ans, &err);
    if (r < 0) {
        a->failed = true;
        copy_text(a->why, sizeof(a->why), err.text);
    } else if (ans->kind == BR_ANSWER_ERROR && strncmp(ans->detail, "unknown-verb", 12) == 0) {
        ctl_err("audit: this breachd has no bulk lane (it does not know LANE): auditing in the "
                "interactive lane");
    } else if (ans->kind != BR_ANSWER_OTHER || strcmp(ans->detail, "OK") != 0) {
        ctl_err("audit: LANE bulk was not accepted (%.80s): auditing in the interactive lane",
                ans->detail);
    }
    free(ans);
}

static void keep_answer(verdict *v, const br_answer *ans)
{
    v->kind = ans->kind;
    v->count = ans->count;
    copy_text(v->detail, sizeof(v->detail), ans->detail);
}

/* Ask for the verdicts idx[0..n): every one is answered when this returns
 * (by the daemon, or with the connection's failure). ERR busy answers are
 * asked again with a smaller window. */
static void ask(audit *a, br_client_request *reqs, const uint32_t *idx, size_t n)
{
    br_request_kind kind = a->o->ntlm ? BR_REQ_NT : BR_REQ_SHA1;
    size_t hl = a->o->ntlm ? BR_NT_LEN : BR_SHA1_LEN, window = WINDOW;
    for (int round = 0; round < BUSY_ROUNDS && !a->failed; round++) {
        size_t m = 0;
        uint32_t pending[CHUNK];
        for (size_t i = 0; i < n; i++)
            if (a->v[idx[i]].kind == BR_ANSWER_NONE) {
                pending[m] = idx[i];
                reqs[m++] =
                    (br_client_request){.kind = kind, .arg = a->v[idx[i]].hash, .arg_len = hl};
            }
        if (m == 0)
            return;
        br_error err = {{0}};
        if (br_client_batch(a->c, reqs, m, window, &err) < 0) {
            a->failed = true;
            copy_text(a->why, sizeof(a->why), err.text);
            ctl_err("audit: %s", err.text);
        }
        bool busy = false;
        for (size_t i = 0; i < m; i++) {
            const br_answer *ans = &reqs[i].answer;
            if (ans->kind == BR_ANSWER_ERROR && strncmp(ans->detail, "busy", 4) == 0 &&
                round + 1 < BUSY_ROUNDS) {
                busy = true;
                continue;
            }
            if (ans->kind != BR_ANSWER_NONE)
                keep_answer(&a->v[pending[i]], ans);
        }
        if (busy)
            window = BR_MAX(window / 2, (size_t)1);
    }
}

/* Answer the verdicts of accounts [first, first + n) not asked yet. */
static void answer_chunk(audit *a, br_client_request *reqs, size_t first, size_t n)
{
    uint32_t idx[CHUNK];
    size_t m = 0;
    for (size_t i = first; i < first + n; i++) {
        verdict *v = &a->v[a->acc[i].dist];
        if (a->acc[i].empty || v->asked)
            continue;
        v->asked = true;
        idx[m++] = a->acc[i].dist;
    }
    if (m && !a->failed)
        ask(a, reqs, idx, m);
    for (size_t i = 0; i < m; i++) {
        verdict *v = &a->v[idx[i]];
        if (v->kind == BR_ANSWER_NONE) {
            v->kind = BR_ANSWER_ERROR;
            copy_text(v->detail, sizeof(v->detail), a->failed ? a->why : "no answer");
        }
    }
}

/* ---- output --------------------------------------------------------------------- */

static void count_account(audit *a, const account *ac, const verdict *v)
{
    if (ac->history) {
        a->history++;
        if (!ac->empty && v->kind == BR_ANSWER_ERROR)
            a->errors++;
        else if (ac->empty || v->kind == BR_ANSWER_PWNED)
            a->history_pwned++;
        return;
    }
    if (ac->empty)
        a->empty++;
    else if (v->kind == BR_ANSWER_PWNED)
        a->pwned++;
    else if (v->kind == BR_ANSWER_CLEAN)
        a->clean++;
    else if (v->kind == BR_ANSWER_UNKNOWN)
        a->unknown++;
    else
        a->errors++;
}

static void print_account(const audit *a, const account *ac, const verdict *v)
{
    const char *status = ac->empty ? "EMPTY" : br_answer_kind_name(v->kind);
    if (a->o->json) {
        fputs("{\"user\":", stdout);
        ctl_json_string(stdout, ac->name);
        if (ac->history)
            printf(",\"history\":%" PRIu32, ac->history - 1);
        printf(",\"status\":\"%s\"", status);
        if (!ac->empty && v->kind == BR_ANSWER_PWNED)
            printf(",\"count\":%" PRIu64, v->count);
        if (!ac->empty && v->kind != BR_ANSWER_PWNED && v->kind != BR_ANSWER_CLEAN) {
            fputs(",\"reason\":", stdout);
            ctl_json_string(stdout, v->detail);
        }
        fputs("}\n", stdout);
        return;
    }
    if (ac->history)
        fputs("history: ", stdout);
    audit_print_name(stdout, ac->name);
    if (ac->history)
        printf(" %" PRIu32, ac->history - 1);
    if (ac->empty || v->kind == BR_ANSWER_CLEAN)
        printf(" %s\n", status);
    else if (v->kind == BR_ANSWER_PWNED)
        printf(" PWNED %" PRIu64 "\n", v->count);
    else
        printf(" %s %s\n", status, v->detail);
}

static void summary_text(const audit *a)
{
    printf("summary: accounts=%zu pwned=%" PRIu64 " clean=%" PRIu64 " unknown=%" PRIu64
           " empty=%" PRIu64 " errors=%" PRIu64 " machines_skipped=%" PRIu64 " no_hash=%" PRIu64,
           a->n_current, a->pwned, a->clean, a->unknown, a->empty, a->errors, a->machines,
           a->no_hash);
    if (a->history)
        printf(" history=%" PRIu64 " history_pwned=%" PRIu64, a->history, a->history_pwned);
    putchar('\n');
}

static void summary_json(const audit *a)
{
    printf("{\"summary\":{\"accounts\":%zu,\"pwned\":%" PRIu64 ",\"clean\":%" PRIu64
           ",\"unknown\":%" PRIu64 ",\"empty\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"machines_skipped\":%" PRIu64 ",\"no_hash\":%" PRIu64,
           a->n_current, a->pwned, a->clean, a->unknown, a->empty, a->errors, a->machines,
           a->no_hash);
    if (a->history)
        printf(",\"history\":%" PRIu64 ",\"history_pwned\":%" PRIu64, a->history, a->history_pwned);
    fputs("},\"shared\":[", stdout);
}

/* The accounts of one hash, a run of a->order, when it is shared. */
static bool same_hash(const audit *a, size_t k)
{
    const account *x = &a->acc[a->order[k - 1]], *y = &a->acc[a->order[k]];
    return !x->empty && !y->empty && !x->history && !y->history && x->dist == y->dist;
}

static int by_first(const void *x, const void *y)
{
    const uint32_t *p = x, *q = y; /* [first account, start in order] */
    return (p[0] > q[0]) - (p[0] < q[0]);
}

/* The groups of accounts that share one hash (not the empty password's:
 * those are EMPTY already), in the order of their first account: runs of
 * a->order as [first account index, start in a->order]. NULL when out of
 * memory. */
static uint32_t (*reuse_groups(const audit *a, size_t *nr))[2]
{
    uint32_t(*runs)[2] = calloc(a->n ? a->n : 1, sizeof(*runs));
    *nr = 0;
    if (!runs)
        return NULL;
    for (size_t k = 1; k < a->n; k++)
        if (same_hash(a, k) && (k == 1 || !same_hash(a, k - 1))) {
            runs[*nr][0] = a->order[k - 1];
            runs[(*nr)++][1] = (uint32_t)(k - 1);
        }
    qsort(runs, *nr, sizeof(*runs), by_first);
    return runs;
}

/* The number of accounts in the group that starts at k of a->order. */
static size_t group_size(const audit *a, size_t k)
{
    size_t n = 1;
    while (k + n < a->n && same_hash(a, k + n))
        n++;
    return n;
}

/* The summary, then each group of accounts that share one hash, named by
 * user only. */
static void print_summary(audit *a)
{
    if (a->o->json)
        summary_json(a);
    else
        summary_text(a);
    size_t nr;
    uint32_t(*runs)[2] = reuse_groups(a, &nr);
    if (!runs) {
        ctl_err("audit: out of memory");
        a->errors++;
        return;
    }
    for (size_t r = 0; r < nr; r++) {
        size_t k = runs[r][1], n = group_size(a, k);
        fputs(a->o->json ? (r ? ",[" : "[") : "shared:", stdout);
        for (size_t j = 0; j < n; j++) {
            const char *name = a->acc[a->order[k + j]].name;
            if (a->o->json) {
                fputs(j ? "," : "", stdout);
                ctl_json_string(stdout, name);
            } else {
                fputs(j ? ", " : " ", stdout);
                audit_print_name(stdout, name);
            }
        }
        fputs(a->o->json ? "]" : "\n", stdout);
    }
    if (a->o->json)
        fputs("]}\n", stdout);
    free(runs);
}

/* ---- the HTML report ------------------------------------------------------------ */

/* The breached and the empty accounts (not old passwords) into r. */
static int report_accounts(const audit *a, audit_report *r, const char **empty)
{
    r->breached = calloc(a->n ? a->n : 1, sizeof(*r->breached));
    if (!r->breached)
        return -ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        const account *ac = &a->acc[i];
        if (ac->history)
            continue;
        if (ac->empty)
            empty[r->n_empty++] = ac->name;
        else if (a->v[ac->dist].kind == BR_ANSWER_PWNED)
            r->breached[r->n_breached++] =
                (audit_report_account){.name = ac->name, .count = a->v[ac->dist].count};
    }
    r->empty_names = empty;
    return 0;
}

/* The reuse groups into r; names holds their names (a->n at most). */
static int report_groups(const audit *a, audit_report *r, const char **names)
{
    size_t nr, used = 0;
    uint32_t(*runs)[2] = reuse_groups(a, &nr);
    r->groups = calloc(nr ? nr : 1, sizeof(*r->groups));
    if (!runs || !r->groups) {
        free(runs);
        return -ENOMEM;
    }
    for (size_t g = 0; g < nr; g++) {
        size_t k = runs[g][1], n = group_size(a, k);
        const verdict *v = &a->v[a->acc[a->order[k]].dist];
        r->groups[g] = (audit_report_group){
            .names = names + used, .n = n, .count = v->kind == BR_ANSWER_PWNED ? v->count : 0};
        for (size_t j = 0; j < n; j++)
            names[used++] = a->acc[a->order[k + j]].name;
    }
    r->n_groups = nr;
    free(runs);
    return 0;
}

/* --html: the report as one HTML page. */
static int write_html(const audit *a, const char *source)
{
    audit_report r = {.source = source,
                      .accounts = a->n_current,
                      .pwned = a->pwned,
                      .clean = a->clean,
                      .unknown = a->unknown,
                      .empty = a->empty,
                      .errors = a->errors,
                      .machines = a->machines,
                      .no_hash = a->no_hash,
                      .history = a->history,
                      .history_pwned = a->history_pwned};
    const char **empty = calloc(a->n ? a->n : 1, sizeof(*empty));
    const char **names = calloc(a->n ? a->n : 1, sizeof(*names));
    char why[512];
    int rc = -1;
    if (!empty || !names || report_accounts(a, &r, empty) < 0 || report_groups(a, &r, names) < 0)
        ctl_err("audit: out of memory");
    else if (audit_write_html(a->o->html, &r, why, sizeof(why)) < 0)
        ctl_err("audit: --html %s", why);
    else
        rc = 0;
    free(r.breached);
    free(r.groups);
    free(empty);
    free(names);
    return rc;
}

/* ---- the command ---------------------------------------------------------------- */

static void audit_free(audit *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->acc[i].name);
    free(a->acc);
    if (a->hash)
        br_wipe(a->hash, a->cap * BR_SHA1_LEN);
    free(a->hash);
    if (a->v)
        br_wipe(a->v, a->nv * sizeof(*a->v));
    free(a->v);
    free(a->order);
    br_client_free(a->c);
}

static int run(audit *a, const ctl_globals *g)
{
    if (plan(a) < 0) {
        ctl_err("audit: out of memory");
        return EXIT_ERROR;
    }
    br_error err = {{0}};
    if (a->nv > 0 && br_client_connect(g->socket_path, a->o->timeout_ms, &a->c, &err) < 0) {
        ctl_err("%s", err.text);
        return EXIT_ERROR;
    }
    br_client_request *reqs = calloc(CHUNK, sizeof(*reqs));
    if (!reqs) {
        ctl_err("audit: out of memory");
        return EXIT_ERROR;
    }
    if (a->c)
        ask_bulk_lane(a);
    /* Progress only where it does not mix with the report on one terminal. */
    audit_progress prog = {.tty = isatty(STDERR_FILENO) == 1 && isatty(STDOUT_FILENO) != 1,
                           .total = a->n};
    for (size_t i = 0; i < a->n; i += CHUNK) {
        size_t n = BR_MIN((size_t)CHUNK, a->n - i);
        answer_chunk(a, reqs, i, n);
        for (size_t k = i; k < i + n; k++) {
            const verdict *v = &a->v[a->acc[k].dist];
            count_account(a, &a->acc[k], v);
            print_account(a, &a->acc[k], v);
        }
        fflush(stdout);
        audit_progress_show(&prog, i + n);
    }
    audit_progress_done(&prog);
    br_wipe(reqs, CHUNK * sizeof(*reqs));
    free(reqs);
    print_summary(a);
    if (fflush(stdout) != 0) {
        ctl_err("audit: writing the report: %s", strerror(errno));
        return EXIT_ERROR;
    }
    if (a->o->html && write_html(a, a->source) < 0)
        return EXIT_ERROR;
    return a->errors              ? EXIT_ERROR
           : a->pwned || a->empty ? EXIT_PWNED
           : a->unknown           ? EXIT_UNKNOWN
                                  : EXIT_CLEAN;
}

int cmd_audit(const ctl_globals *g0, int argc, char **argv)
{
    audit_opts o = {.ntlm = true, .timeout_ms = AUDIT_DEFAULT_TIMEOUT_MS};
    ctl_globals own = *g0;
    int first;
    int r = audit_parse_opts(argc, argv, &o, &own, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    const char *path = first < argc ? argv[first] : NULL;
    audit a = {.o = &o, .source = path && strcmp(path, "-") != 0 ? path : "standard input"};
    int rc = EXIT_ERROR;
    int rd = read_input(&a, path);
    if (rd == 0 && history_last(&a) < 0) {
        ctl_err("audit: out of memory");
        rd = -1;
    }
    if (rd == 0) {
        tell_skipped(&a, path && strcmp(path, "-") != 0 ? path : "<stdin>");
        if (a.n_current == 0)
            ctl_err("audit: no account to audit in %s (%" PRIu64 " machine accounts skipped: "
                    "--machines audits them; %" PRIu64 " without an NT hash)",
                    path ? path : "<stdin>", a.machines, a.no_hash);
        else
            rc = run(&a, &own);
    }
    audit_free(&a);
    return rc;
}

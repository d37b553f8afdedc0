/* SPDX-License-Identifier: MIT */
/* Helpers for the resolver integration tests and the resolver benchmark:
 * temporary directories, child processes (nginx, the fault server) bound to
 * 127.0.0.1 that die with the test, generated range mirrors, and running a
 * libevent loop until answers arrive. Everything aborts on setup failure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "range/range.h"
#include "range/resolver.h"

struct event_base;

/* ---- files and processes ---- */

char *rt_mkdtemp(const char *tag); /* malloc'd path under $TMPDIR or /tmp */
void rt_rmrf(const char *path);
char *rt_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* malloc'd */
void rt_write_file(const char *path, const void *data, size_t len);
char *rt_read_file(const char *path, size_t *len); /* NUL-terminated, NULL when missing */
int rt_free_port(void);                            /* a port free on 127.0.0.1 right now */
bool rt_wait_port(int port, int timeout_ms);
/* fork + exec argv; the child dies with the parent (PR_SET_PDEATHSIG). When
 * stdout_fd is not NULL the child's stdout is a pipe returned there; quiet
 * sends its stdout and stderr to /dev/null otherwise. */
pid_t rt_spawn(char *const argv[], int *stdout_fd, bool quiet);
void rt_stop(pid_t pid); /* SIGTERM, wait, SIGKILL after 3 s */
/* Keep only the environment a test needs from libcurl's point of view: no proxy variables. */
void rt_clean_env(void);

/* ---- nginx ---- */

typedef struct rt_nginx {
    pid_t pid;
    int port;
    char *dir; /* nginx's prefix directory: conf, logs, www/ */
    char *www; /* document root: the mirror lives in www/range/XXXXX.txt */
    char *access_log;
    bool tls;
    char *cert; /* tls: the self-signed certificate (also the CA file) */
} rt_nginx;

/* Start nginx in dir (created by the caller) serving dir/www: /range/XXXXX
 * from www/range/XXXXX.txt (404 when missing), /range/EEEEE answers 500,
 * ETag and gzip on. tls: HTTPS + HTTP/2 with a fresh self-signed certificate
 * for 127.0.0.1. Access log format: "STATUS URI CONN CONN_REQUESTS PROTOCOL
 * ADD_PADDING USER_AGENT". */
void rt_nginx_start(rt_nginx *n, const char *dir, bool tls);
void rt_nginx_start_ex(rt_nginx *n, const char *dir, bool tls, bool gzip); /* gzip on or off */
/* Everything rt_nginx_start_ex does, plus (all optional, 0 / NULL: as above): */
typedef struct rt_nginx_opts {
    bool tls;
    bool no_gzip;
    int workers;                /* worker_processes (> 1: with a master process); 0: 1 */
    int worker_connections;     /* 0: 1024 */
    bool no_access_log;         /* access_log off (benchmarks) */
    const char *http_extra;     /* directives added inside http { } */
    const char *location_extra; /* directives added inside location /range/ { } */
} rt_nginx_opts;
void rt_nginx_start_opts(rt_nginx *n, const char *dir, const rt_nginx_opts *o);
void rt_nginx_stop(rt_nginx *n);
/* Lines of the access log (malloc'd array of malloc'd strings). */
char **rt_access_lines(const rt_nginx *n, size_t *count);
/* Lines whose URI is exactly uri (all lines for NULL), after waiting up to
 * 3 s for at least `want` of them (nginx logs just after it answers). */
size_t rt_access_count(const rt_nginx *n, const char *uri, size_t want);
void rt_free_lines(char **lines, size_t count);

/* ---- the fault server ---- */

typedef struct rt_fault {
    pid_t pid;
    int port;
    char *dir; /* state dir: requests.log, the "down" switch */
} rt_fault;

void rt_fault_start(rt_fault *f, const char *exe, const char *dir);
void rt_fault_stop(rt_fault *f);
size_t rt_fault_count(const rt_fault *f, const char *mode,
                      uint32_t prefix); /* requests seen; prefix > 0xFFFFF: any */
void rt_fault_set_down(const rt_fault *f, bool down);

/* ---- ranges ---- */

typedef struct rt_entry {
    uint8_t hash[32];
    uint32_t count;
} rt_entry;

typedef struct rt_range {
    br_range_kind kind;
    uint32_t prefix;
    size_t n, npad;
    rt_entry *e;   /* real entries, counts >= 1 */
    rt_entry *pad; /* padding: count 0 */
} rt_range;

enum {
    RT_LOWER = 1,       /* lowercase hex */
    RT_LF = 2,          /* LF line ends (else CRLF) */
    RT_NO_FINAL_NL = 4, /* no line end after the last line */
    RT_PADDED = 8,      /* append the padding lines */
};

void rt_range_gen(rt_range *r, br_range_kind kind, uint32_t prefix, size_t n, size_t npad,
                  uint64_t seed);
char *rt_range_body(const rt_range *r, unsigned style, size_t *len);
void rt_range_write(const rt_range *r, unsigned style, const char *path);
void rt_range_free(rt_range *r);
/* A hash with this prefix that is not in r (nor in its padding). */
void rt_absent_hash(const rt_range *r, uint64_t seed, uint8_t *out);
void rt_hash_with_prefix(br_range_kind kind, uint32_t prefix, uint64_t seed, uint8_t *out);
void rt_prefix_hex(uint32_t prefix, char out[6]);

/* ---- answers ---- */

typedef struct rt_ans {
    int calls; /* callback calls (must end at exactly 1 for an async answer) */
    bool sync; /* answered by the return value */
    br_resolve_result res;
} rt_ans;

void rt_ans_cb(void *ctx, const br_resolve_result *res);
/* br_resolver_resolve into a, in partition 0; returns its return value. */
int rt_resolve(br_resolver *r, br_range_kind kind, const uint8_t *hash, rt_ans *a);
/* The same in a given partition. */
int rt_resolve_in(br_resolver *r, uint32_t partition, br_range_kind kind, const uint8_t *hash,
                  rt_ans *a);
/* How many times slower than a plain build the tests run: BREACHD_TEST_SLOW,
 * which `meson test --setup valgrind` sets (tests/README.md), else 1. */
int rt_slow(void);
/* Run the loop until every a[i] is answered or timeout_ms (times rt_slow())
 * pass; true when all answered. */
bool rt_wait(struct event_base *base, rt_ans *a, size_t n, int timeout_ms);
/* Resolve and wait for one answer (timeout 10 s); aborts if none. */
br_resolve_result rt_resolve_wait(struct event_base *base, br_resolver *r, br_range_kind kind,
                                  const uint8_t *hash);
/* Run the loop for ms milliseconds. */
void rt_run_for(struct event_base *base, int ms);

/* A settable wall clock for br_resolver_config.clock. */
typedef struct rt_clock {
    int64_t now;
} rt_clock;
int64_t rt_clock_fn(void *ctx);

/* Cache inspection: committed entries (flushes first through the resolver when r is given). */
size_t rt_cache_entries(br_range_cache *c);
bool rt_cache_has(br_range_cache *c, br_range_kind kind, uint32_t prefix);

double rt_now(void); /* monotonic seconds */

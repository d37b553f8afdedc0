/* SPDX-License-Identifier: MIT */
/* helperfeed: drive a Squid helper through its stdin/stdout protocol, as
 * Squid would, and time it.
 *
 *   helperfeed [--format acl|rewrite] [-c N] [--verdicts FILE] [-q]
 *              STREAM -- COMMAND [ARGS...]
 *
 * Starts COMMAND with pipes on its stdin and stdout (stderr is inherited)
 * and sends it every URL of STREAM (one a line) as Squid formats them:
 *
 *   --format acl (default): an external ACL helper with "%URI":
 *       "[ID ]URL -"          (Squid appends %DATA, "-" when empty)
 *     replies "[ID ]OK ..." (the ACL matches: blocked), "[ID ]ERR ..." or
 *     "[ID ]BH ...";
 *   --format rewrite: a url_rewrite_program such as squidGuard, with Squid's
 *     default url_rewrite_extras:
 *       "URL 127.0.0.1/- - GET myip=127.0.0.1 myport=3128"
 *     replies "OK rewrite-url=..." / "OK url=..." (blocked: redirected),
 *     "ERR" (no change) or "BH ...". No channel IDs (squidGuard 1.6 reads
 *     none: it answers one line at a time, in order).
 *
 * -c N > 0: closed loop, at most N requests outstanding; with --format acl
 * each carries a channel ID 0..N-1 that is reused once answered (Squid's
 * "concurrency=N"). -c 1 is how Squid drives a helper without concurrency.
 * -c 0: open loop, the whole stream written as fast as the helper reads it
 * (no channel IDs with -c 0 --format rewrite; with acl, IDs count up). Squid
 * never does that; it is the helper's upper bound.
 *
 * Reported: URLs/s from the first reply (the first URL goes alone, so that
 * the helper's start-up is not timed) to the last one, the helper's CPU
 * time (getrusage of the waited-for child: it does not count a daemon the
 * helper talks to), and the replies: blocked / passed / BH / other. With
 * --verdicts FILE, one character per URL in stream order (B blocked, P
 * passed, H BH, ? other) for comparing two helpers. Last line:
 *   RESULT format=acl conc=64 urls=... seconds=... urls_per_s=... blocked=...
 *          passed=... bh=... other=... child_cpu_s=... feeder_cpu_s=...
 * (feeder_cpu_s: this program's own CPU time, loading the stream included).
 * Exit status 0, 1 on an error (helper died, protocol error), 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_lines.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char **urls;
static size_t n_urls;

static int load(const char *path)
{
    return bench_read_lines("helperfeed", path, &urls, &n_urls, NULL);
}

static size_t *url_lens;

/* Append s (n bytes) at o; the new end. */
static char *put(char *o, const char *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

/* Request line i as Squid formats it (see the top), at o: its length.
 * Copies rather than snprintf: the feeder stands in for Squid, and its own
 * CPU competes with the helper's on a small machine. */
static size_t format_line(char *o, bool rewrite, bool ids, size_t ch_id, size_t i)
{
    static const char extras[] = " 127.0.0.1/- - GET myip=127.0.0.1 myport=3128\n";
    char *e = o;
    if (ids) {
        char d[24];
        size_t k = 0;
        do
            d[k++] = (char)('0' + ch_id % 10);
        while ((ch_id /= 10) > 0);
        while (k > 0)
            *e++ = d[--k];
        *e++ = ' ';
    }
    e = put(e, urls[i], url_lens[i]);
    e = rewrite ? put(e, extras, sizeof(extras) - 1) : put(e, " -\n", 3);
    return (size_t)(e - o);
}

int main(int argc, char **argv)
{
    bool rewrite = false, quiet = false;
    unsigned long conc = 1;
    const char *verdict_path = NULL;
    static const struct option lo[] = {{"format", required_argument, NULL, 'f'},
                                       {"verdicts", required_argument, NULL, 'v'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "+c:qf:", lo, NULL)) != -1) {
        switch (ch) {
        case 'c': {
            char *end;
            conc = strtoul(optarg, &end, 10);
            if (*end || conc > 1000000) {
                fprintf(stderr, "helperfeed: bad -c %s\n", optarg);
                return 2;
            }
            break;
        }
        case 'f':
            if (strcmp(optarg, "acl") && strcmp(optarg, "rewrite")) {
                fprintf(stderr, "helperfeed: --format acl or rewrite\n");
                return 2;
            }
            rewrite = optarg[0] == 'r';
            break;
        case 'v':
            verdict_path = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        default:
            return 2;
        }
    }
    if (optind + 2 > argc || strcmp(argv[optind + 1], "--") != 0 || optind + 3 > argc) {
        fprintf(stderr,
                "usage: helperfeed [--format acl|rewrite] [-c N] [--verdicts FILE] [-q] STREAM -- "
                "COMMAND [ARGS...]\n");
        return 2;
    }
    if (load(argv[optind]) < 0)
        return 1;
    url_lens = malloc((n_urls + 1) * sizeof(*url_lens));
    if (!url_lens)
        return 1;
    for (size_t i = 0; i < n_urls; i++) {
        url_lens[i] = strlen(urls[i]);
        if (url_lens[i] > 8192) {
            fprintf(stderr, "helperfeed: URL %zu is longer than 8192 bytes\n", i + 1);
            return 1;
        }
    }
    bool ids = !rewrite && conc != 1;
    if (rewrite && conc > 1) {
        fprintf(stderr, "helperfeed: --format rewrite takes -c 1 or -c 0 (no channel IDs)\n");
        return 2;
    }

    int in_p[2], out_p[2];
    if (pipe2(in_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0) {
        perror("pipe");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        dup2(in_p[0], STDIN_FILENO);
        dup2(out_p[1], STDOUT_FILENO);
        execvp(argv[optind + 2], argv + optind + 2);
        fprintf(stderr, "helperfeed: %s: %s\n", argv[optind + 2], strerror(errno));
        _exit(127);
    }
    close(in_p[0]);
    close(out_p[1]);
    int wfd = in_p[1], rfd = out_p[0];
    fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);

    /* channel -> stream index (closed loop with IDs), free channels */
    size_t slots = conc ? conc : 1;
    size_t *chan_url = malloc(slots * sizeof(size_t));
    size_t *free_ch = malloc(slots * sizeof(size_t));
    char *verdict = calloc(n_urls + 1, 1);
    if (!chan_url || !free_ch || !verdict)
        return 1;
    size_t n_free = 0;
    for (size_t i = 0; i < slots; i++)
        free_ch[n_free++] = slots - 1 - i;

    size_t next = 0, answered = 0, outstanding = 0,
           in_order = 0; /* in_order: next URL answered without IDs */
    uint64_t blocked = 0, passed = 0, bh = 0, other = 0;
    char *wbuf = malloc(1 << 20), *rbuf = malloc(1 << 20);
    size_t wlen = 0, woff = 0, rlen = 0;
    if (!wbuf || !rbuf)
        return 1;
    bool failed = false;
    double t0 = now_s();
    while (answered < n_urls) {
        /* queue requests */
        /* The first URL alone: its answer starts the clock (the helper's
         * start-up, e.g. opening its databases, is not timed). */
        while (next < n_urls && (answered > 0 || next == 0) && (conc == 0 || outstanding < conc) &&
               wlen + 8300 < (1 << 20)) {
            size_t ch_id = next;
            if (conc > 0 && ids)
                ch_id = free_ch[--n_free];
            if (conc > 0 && ids)
                chan_url[ch_id] = next;
            wlen += format_line(wbuf + wlen, rewrite, ids, ch_id, next);
            next++;
            outstanding++;
        }
        struct pollfd p[2] = {{.fd = woff < wlen ? wfd : -1, .events = POLLOUT},
                              {.fd = rfd, .events = POLLIN}};
        if (poll(p, 2, 30000) <= 0) {
            fprintf(stderr, "helperfeed: no progress for 30 s (%zu of %zu answered)\n", answered,
                    n_urls);
            failed = true;
            break;
        }
        if (p[0].revents & (POLLOUT | POLLERR)) {
            ssize_t w = write(wfd, wbuf + woff, wlen - woff);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                fprintf(stderr, "helperfeed: write to the helper: %s\n", strerror(errno));
                failed = true;
                break;
            }
            if (w > 0)
                woff += (size_t)w;
            if (woff == wlen)
                woff = wlen = 0;
            else if (woff > (1 << 19)) {
                memmove(wbuf, wbuf + woff, wlen - woff);
                wlen -= woff;
                woff = 0;
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(rfd, rbuf + rlen, (1 << 20) - rlen);
            if (r <= 0) {
                fprintf(stderr, "helperfeed: the helper closed its output (%zu of %zu answered)\n",
                        answered, n_urls);
                failed = true;
                break;
            }
            rlen += (size_t)r;
            char *s = rbuf, *end = rbuf + rlen, *lf;
            while ((lf = memchr(s, '\n', (size_t)(end - s)))) {
                *lf = '\0';
                char *res = s;
                size_t idx;
                if (ids) {
                    char *e2;
                    unsigned long long id = strtoull(s, &e2, 10);
                    if (e2 == s || *e2 != ' ') {
                        fprintf(stderr, "helperfeed: reply without a channel ID: %.80s\n", s);
                        failed = true;
                        break;
                    }
                    res = e2 + 1;
                    if (conc > 0) {
                        if (id >= slots) {
                            fprintf(stderr, "helperfeed: unknown channel in %.80s\n", s);
                            failed = true;
                            break;
                        }
                        idx = chan_url[id];
                        free_ch[n_free++] = (size_t)id;
                    } else {
                        idx = (size_t)id;
                    }
                } else {
                    idx = in_order++;
                }
                if (idx >= n_urls || verdict[idx]) {
                    fprintf(stderr, "helperfeed: unexpected reply %.80s\n", s);
                    failed = true;
                    break;
                }
                char v;
                if (strncmp(res, "OK", 2) == 0 && (res[2] == '\0' || res[2] == ' ')) {
                    /* rewrite: a plain "OK" without a new URL changes nothing */
                    bool redirect = !rewrite || strstr(res, "url=") != NULL;
                    v = redirect ? 'B' : 'P';
                } else if (strncmp(res, "ERR", 3) == 0 && (res[3] == '\0' || res[3] == ' ')) {
                    v = 'P';
                } else if (strncmp(res, "BH", 2) == 0 && (res[2] == '\0' || res[2] == ' ')) {
                    v = 'H';
                } else {
                    v = '?';
                }
                verdict[idx] = v;
                if (answered == 0)
                    t0 = now_s();
                blocked += v == 'B';
                passed += v == 'P';
                bh += v == 'H';
                other += v == '?';
                answered++;
                outstanding--;
                s = lf + 1;
            }
            if (failed)
                break;
            rlen = (size_t)(end - s);
            memmove(rbuf, s, rlen);
        }
    }
    double t1 = now_s();
    close(wfd);
    close(rfd);
    int status = 0;
    if (failed)
        kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    double own = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
                 (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
    double secs = t1 - t0;
    size_t timed = answered > 0 ? answered - 1 : 0;
    if (verdict_path) {
        FILE *f = fopen(verdict_path, "w");
        if (!f || fwrite(verdict, 1, n_urls, f) != n_urls || fclose(f) != 0) {
            fprintf(stderr, "helperfeed: %s: %s\n", verdict_path, strerror(errno));
            return 1;
        }
    }
    if (!quiet)
        printf("helperfeed: %zu URLs in %.3f s: %.0f URLs/s (%s, %s); blocked %" PRIu64
               ", passed %" PRIu64 ", BH %" PRIu64 ", other %" PRIu64
               "; helper CPU %.2f s (%.0f ns/URL)\n",
               answered, secs, (double)timed / secs,
               rewrite ? "url_rewrite protocol" : "external ACL protocol",
               conc ? "closed loop" : "open loop", blocked, passed, bh, other, cpu,
               cpu * 1e9 / (double)n_urls);
    printf("RESULT format=%s conc=%lu urls=%zu seconds=%.3f urls_per_s=%.0f blocked=%" PRIu64
           " passed=%" PRIu64 " bh=%" PRIu64 " other=%" PRIu64
           " child_cpu_s=%.2f feeder_cpu_s=%.2f\n",
           rewrite ? "rewrite" : "acl", conc, answered, secs, (double)timed / secs, blocked, passed,
           bh, other, cpu, own);
    for (size_t i = 0; i < n_urls; i++)
        free(urls[i]);
    free(urls);
    free(url_lens);
    free(chan_url);
    free(free_ch);
    free(verdict);
    free(wbuf);
    free(rbuf);
    return failed || answered < n_urls ? 1 : 0;
}

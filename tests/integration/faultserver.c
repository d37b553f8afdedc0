/* SPDX-License-Identifier: MIT */
/* A small HTTP/1.1 server that misbehaves on purpose, for the resolver tests.
 *
 *   faultserver STATEDIR
 *
 * Listens on 127.0.0.1 at a free port, prints the port and a newline on
 * stdout, then serves until killed (the tests also make it die with them).
 * One thread per connection; keep-alive for well-formed answers. Every
 * request is appended to STATEDIR/requests.log as
 *   "MODE PREFIX padding=<Add-Padding> inm=<If-None-Match> ims=<If-Modified-Since> ua=<User-Agent>"
 * (values "-" when absent, spaces in them turned into '_').
 *
 * Paths are /MODE/PREFIX. Asked as a forward proxy (GET http://HOST/MODE/PREFIX)
 * it serves the same and logs the mode as "proxied-MODE". The "ok" body of a prefix P is three
 * lines: P + 00000000000000000000000000000000001 : 42 P + ABCDEF0123456789ABCDEF0123456789ABC : 7
 *   P + FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF : 0   (padding)
 * Modes:
 *   ok         200 with the ok body
 *   validators ok body + ETag "v1-P", Last-Modified, Cache-Control max-age=60;
 *              304 when If-None-Match matches
 *   splitage   as validators, but max-age=1 for the prefix named in
 *              STATEDIR/short (its first word; a hostile upstream splitting a
 *              decoy burst)
 *   uvalidators as validators, with an empty body (a URL range without entries)
 *   lmonly     ok body + Last-Modified only; 304 when If-Modified-Since matches
 *   delay      sleeps 3 s, then the ok body
 *   drip       announces the ok body, then sends it one byte every 100 ms
 *   reset      announces 4000 bytes, sends 100, then resets the connection
 *   badlen     announces 100 bytes more than it sends, then closes
 *   shortlen   announces 20 bytes (the cut falls inside the first suffix)
 *   big        announces and sends 9 MiB of valid lines
 *   bigchunked 9 MiB of valid lines, chunked, no length
 *   garbage    200 with lines that are not SUFFIX:COUNT
 *   empty      200 with an empty body
 *   notfound   404
 *   fail       503
 *   flaky      503 to the first request of each prefix, then the ok body
 *   slowfirst  sleeps 3 s before the ok body on the first request of each
 *              prefix, then answers at once
 *   sw         503 while STATEDIR/down exists, else the ok body
 *   limit      while STATEDIR/limit exists, the answer it describes: its
 *              first line "STATUS [COUNT [DELAY_MS]]", the next ones header
 *              lines (e.g. "Retry-After: 2"); with COUNT, the file goes after
 *              COUNT answers (counted when a request arrives); DELAY_MS: wait
 *              that long before answering. Else the ok body
 *   close      reads the request and closes without a word
 *   chaos      (downloader tests) by prefix P and the number of its request N:
 *              N=1: P%4==0 503, P%4==1 reset as above, P%4==2 close, P%4==3 ok;
 *              N=2: P%8==0 500, else ok; N>=3: ok
 *   badsome    P%64==5: always 503; P%64==6: always the garbage body; else ok
 *   badgateway 502
 *   hang       reads the request and never answers: waits until the client
 *              closes the connection
 *   r301 r302 r307 r308
 *              that redirect, to STATEDIR/location (its first line, with
 *              "{prefix}" replaced by the prefix) or else to /ok/PREFIX
 *   switch     serves as the mode named in STATEDIR/switch (its first word;
 *              "ok" without the file), logged under that mode
 *
 * While STATEDIR/refuse exists the server is down: its listening socket is
 * closed (connections are refused) within about 20 ms, the port held by a
 * socket bound to it that does not listen, and a request on a connection
 * accepted before is answered by a reset. When the file goes, it listens
 * again on the same port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAST_MODIFIED "Wed, 21 Oct 2015 07:28:00 GMT"

static const char *state_dir;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned flaky_seen[1 << 20 >> 5];  /* one bit per prefix */
static unsigned slow_seen[1 << 20 >> 5];   /* one bit per prefix */
static unsigned char chaos_count[1 << 20]; /* requests per prefix, saturating */

static bool send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static void ok_body(const char *prefix, char *out, size_t cap, size_t *len)
{
    (void)prefix;
    *len = (size_t)snprintf(out, cap,
                            "00000000000000000000000000000000001:42\r\n"
                            "ABCDEF0123456789ABCDEF0123456789ABC:7\r\n"
                            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:0\r\n");
}

static bool respond(int fd, int status, const char *reason, const char *extra, const char *body,
                    size_t len)
{
    char head[1024];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
                     status, reason, len, extra ? extra : "");
    return send_all(fd, head, (size_t)n) && (len == 0 || send_all(fd, body, len));
}

static bool state_file_exists(const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", state_dir, name);
    return stat(path, &st) == 0;
}

/* The first line of STATEDIR/name into out ("" without the file). */
static void state_file_line(const char *name, char *out, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", state_dir, name);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
}

static void reset_connection(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Mode "hang": never answer; wait until the client goes away. */
static bool hang(int fd)
{
    char sink[4096];
    for (;;) {
        ssize_t n = recv(fd, sink, sizeof(sink), 0);
        if (n == 0 || (n < 0 && errno != EINTR))
            return false;
    }
}

/* Modes r301 ... r308: a redirect to STATEDIR/location or /ok/PREFIX. */
static bool redirect(int fd, const char *mode, const char *prefix)
{
    char tmpl[1024], extra[1400];
    state_file_line("location", tmpl, sizeof(tmpl));
    if (!tmpl[0])
        snprintf(tmpl, sizeof(tmpl), "/ok/{prefix}");
    char *at = strstr(tmpl, "{prefix}");
    if (at)
        snprintf(extra, sizeof(extra), "Location: %.*s%s%s\r\n", (int)(at - tmpl), tmpl, prefix,
                 at + 8);
    else
        snprintf(extra, sizeof(extra), "Location: %s\r\n", tmpl);
    int status = atoi(mode + 1);
    return respond(fd, status, "Redirect", extra, "moved\n", 6);
}

static void header_value(const char *req, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    snprintf(out, cap, "-");
    for (const char *l = strstr(req, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            const char *v = h + nl + 1;
            while (*v == ' ')
                v++;
            const char *e = strstr(v, "\r\n");
            size_t vl = e ? (size_t)(e - v) : strlen(v);
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            for (char *c = out; *c; c++)
                if (*c == ' ')
                    *c = '_';
            return;
        }
    }
}

static void log_request(const char *mode, const char *prefix, const char *req)
{
    char pad[64], inm[300], ims[300], ua[128];
    header_value(req, "Add-Padding", pad, sizeof(pad));
    header_value(req, "If-None-Match", inm, sizeof(inm));
    header_value(req, "If-Modified-Since", ims, sizeof(ims));
    header_value(req, "User-Agent", ua, sizeof(ua));
    char path[4096];
    snprintf(path, sizeof(path), "%s/requests.log", state_dir);
    pthread_mutex_lock(&lock);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s %s padding=%s inm=%s ims=%s ua=%s\n", mode, prefix, pad, inm, ims, ua);
        fclose(f);
    }
    pthread_mutex_unlock(&lock);
}

/* Mode "limit": the status and header lines STATEDIR/limit asks for now
 * (0: none) and the delay before the answer, counting its answers down. */
static int limit_answer(char *extra, size_t cap, long *delay_ms)
{
    char path[4096], text[2048];
    snprintf(path, sizeof(path), "%s/limit", state_dir);
    extra[0] = '\0';
    pthread_mutex_lock(&lock);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    int status = 0;
    long count = -1;
    *delay_ms = 0;
    char *rest = strchr(text, '\n');
    if (f && sscanf(text, "%d %ld %ld", &status, &count, delay_ms) >= 1) {
        size_t used = 0;
        char *save = NULL;
        for (char *l = rest ? strtok_r(rest + 1, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save))
            used += (size_t)snprintf(extra + used, cap - used, "%s\r\n", l);
        if (count == 1) {
            unlink(path);
        } else if (count > 1) {
            FILE *w = fopen(path, "w");
            if (w) {
                fprintf(w, "%d %ld %ld\n", status, count - 1, *delay_ms);
                for (char *l = extra; *l;) {
                    char *e = strstr(l, "\r\n");
                    fprintf(w, "%.*s\n", (int)(e - l), l);
                    l = e + 2;
                }
                fclose(w);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return status;
}

static void big_lines(char *buf, size_t cap, size_t *len)
{
    size_t off = 0;
    unsigned i = 0;
    while (off + 48 < cap) {
        off += (size_t)snprintf(buf + off, cap - off, "%035X:%u\r\n", i, 1 + (i % 1000));
        i++;
    }
    *len = off;
}

/* Serve one request; false: close the connection. */
static bool serve(int fd, const char *req)
{
    char method[16], path[256];
    if (sscanf(req, "%15s %255s", method, path) != 2)
        return false;
    char mode[32] = "", prefix[32] = "";
    const char *rel = path;
    bool proxied = false;
    if (strncmp(rel, "http://", 7) == 0) { /* used as a forward proxy */
        rel = strchr(rel + 7, '/');
        proxied = true;
        if (!rel)
            return false;
    }
    if (sscanf(rel, "/%31[^/]/%31s", mode, prefix) != 2) {
        respond(fd, 400, "Bad Request", NULL, "", 0);
        return false;
    }
    if (state_file_exists("refuse")) { /* down: a connection from before is reset */
        reset_connection(fd);
        return false;
    }
    if (!strcmp(mode, "switch")) {
        char now[64];
        state_file_line("switch", now, sizeof(now));
        if (sscanf(now, "%31s", mode) != 1)
            snprintf(mode, sizeof(mode), "ok");
    }
    if (proxied) {
        char tagged[48];
        snprintf(tagged, sizeof(tagged), "proxied-%s", mode);
        log_request(tagged, prefix, req);
    } else {
        log_request(mode, prefix, req);
    }

    char body[512];
    size_t blen;
    ok_body(prefix, body, sizeof(body), &blen);

    if (!strcmp(mode, "ok"))
        return respond(fd, 200, "OK", NULL, body, blen);
    if (!strcmp(mode, "uvalidators"))
        blen = 0;
    if (!strcmp(mode, "validators") || !strcmp(mode, "splitage") || !strcmp(mode, "uvalidators")) {
        char etag[64], inm[300], extra[512], shortp[64] = "";
        snprintf(etag, sizeof(etag), "\"v1-%s\"", prefix);
        header_value(req, "If-None-Match", inm, sizeof(inm));
        if (!strcmp(mode, "splitage"))
            state_file_line("short", shortp, sizeof(shortp));
        int age = strncasecmp(shortp, prefix, 5) == 0 && strlen(prefix) == 5 ? 1 : 60;
        snprintf(extra, sizeof(extra),
                 "ETag: %s\r\nLast-Modified: " LAST_MODIFIED
                 "\r\nCache-Control: public, max-age=%d\r\n",
                 etag, age);
        if (!strcmp(inm, etag))
            return respond(fd, 304, "Not Modified", extra, "", 0);
        return respond(fd, 200, "OK", extra, body, blen);
    }
    if (!strcmp(mode, "lmonly")) {
        char ims[300];
        header_value(req, "If-Modified-Since", ims, sizeof(ims));
        const char *extra = "Last-Modified: " LAST_MODIFIED "\r\n";
        char want[64];
        snprintf(want, sizeof(want), "%s", LAST_MODIFIED);
        for (char *c = want; *c; c++)
            if (*c == ' ')
                *c = '_';
        if (!strcmp(ims, want))
            return respond(fd, 304, "Not Modified", extra, "", 0);
        return respond(fd, 200, "OK", extra, body, blen);
    }
    if (!strcmp(mode, "delay")) {
        sleep(3);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    if (!strcmp(mode, "drip")) {
        char head[256];
        int n =
            snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", blen);
        if (!send_all(fd, head, (size_t)n))
            return false;
        for (size_t i = 0; i < blen; i++) {
            if (!send_all(fd, body + i, 1))
                return false;
            usleep(100000);
        }
        return true;
    }
    if (!strcmp(mode, "reset")) {
        const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n";
        send_all(fd, head, strlen(head));
        send_all(fd, body, 100 < blen ? 100 : blen);
        usleep(20000);
        reset_connection(fd);
        return false;
    }
    if (!strcmp(mode, "badlen")) {
        char head[256];
        int n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                         blen + 100);
        send_all(fd, head, (size_t)n);
        send_all(fd, body, blen);
        return false;
    }
    if (!strcmp(mode, "shortlen")) {
        const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n";
        send_all(fd, head, strlen(head));
        send_all(fd, body, blen);
        return false;
    }
    if (!strcmp(mode, "big") || !strcmp(mode, "bigchunked")) {
        size_t cap = (size_t)9 << 20;
        char *big = malloc(cap);
        size_t len = 0;
        if (!big)
            return false;
        big_lines(big, cap, &len);
        bool ok;
        if (!strcmp(mode, "big")) {
            ok = respond(fd, 200, "OK", NULL, big, len);
        } else {
            const char *head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
            ok = send_all(fd, head, strlen(head));
            for (size_t off = 0; ok && off < len; off += 65536) {
                size_t c = len - off < 65536 ? len - off : 65536;
                char sz[32];
                int n = snprintf(sz, sizeof(sz), "%zx\r\n", c);
                ok = send_all(fd, sz, (size_t)n) && send_all(fd, big + off, c) &&
                     send_all(fd, "\r\n", 2);
            }
            ok = ok && send_all(fd, "0\r\n\r\n", 5);
        }
        free(big);
        return ok;
    }
    if (!strcmp(mode, "garbage")) {
        const char *g = "hello world\r\nthis is not a range\r\n<html>oops</html>\r\n";
        return respond(fd, 200, "OK", NULL, g, strlen(g));
    }
    if (!strcmp(mode, "empty"))
        return respond(fd, 200, "OK", NULL, "", 0);
    if (!strcmp(mode, "badgateway"))
        return respond(fd, 502, "Bad Gateway", NULL, "bad gateway\n", 12);
    if (!strcmp(mode, "hang"))
        return hang(fd);
    if (!strcmp(mode, "r301") || !strcmp(mode, "r302") || !strcmp(mode, "r307") ||
        !strcmp(mode, "r308"))
        return redirect(fd, mode, prefix);
    if (!strcmp(mode, "notfound"))
        return respond(fd, 404, "Not Found", NULL, "not found\n", 10);
    if (!strcmp(mode, "fail"))
        return respond(fd, 503, "Service Unavailable", NULL, "busy\n", 5);
    if (!strcmp(mode, "flaky")) {
        unsigned p = (unsigned)strtoul(prefix, NULL, 16) & 0xFFFFF;
        pthread_mutex_lock(&lock);
        bool first = !(flaky_seen[p >> 5] & (1u << (p & 31)));
        flaky_seen[p >> 5] |= 1u << (p & 31);
        pthread_mutex_unlock(&lock);
        if (first)
            return respond(fd, 503, "Service Unavailable", NULL, "busy\n", 5);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    if (!strcmp(mode, "limit")) {
        char extra[1024];
        long delay_ms;
        int status = limit_answer(extra, sizeof(extra), &delay_ms);
        if (delay_ms > 0)
            usleep((useconds_t)delay_ms * 1000);
        if (status)
            return respond(fd, status, status == 429 ? "Too Many Requests" : "Unavailable", extra,
                           "slow down\n", 10);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    if (!strcmp(mode, "slowfirst")) {
        unsigned p = (unsigned)strtoul(prefix, NULL, 16) & 0xFFFFF;
        pthread_mutex_lock(&lock);
        bool first = !(slow_seen[p >> 5] & (1u << (p & 31)));
        slow_seen[p >> 5] |= 1u << (p & 31);
        pthread_mutex_unlock(&lock);
        if (first)
            sleep(3);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    if (!strcmp(mode, "sw")) {
        char down[4096];
        struct stat st;
        snprintf(down, sizeof(down), "%s/down", state_dir);
        if (stat(down, &st) == 0)
            return respond(fd, 503, "Service Unavailable", NULL, "down\n", 5);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    if (!strcmp(mode, "close"))
        return false;
    if (!strcmp(mode, "chaos") || !strcmp(mode, "badsome")) {
        unsigned p = (unsigned)strtoul(prefix, NULL, 16) & 0xFFFFF;
        pthread_mutex_lock(&lock);
        unsigned n = chaos_count[p] < 255 ? ++chaos_count[p] : 255;
        pthread_mutex_unlock(&lock);
        if (!strcmp(mode, "badsome")) {
            if (p % 64 == 5)
                return respond(fd, 503, "Service Unavailable", NULL, "busy\n", 5);
            if (p % 64 == 6) {
                const char *g = "hello world\r\nthis is not a range\r\n";
                return respond(fd, 200, "OK", NULL, g, strlen(g));
            }
            return respond(fd, 200, "OK", NULL, body, blen);
        }
        if (n == 1 && p % 4 == 0)
            return respond(fd, 503, "Service Unavailable", NULL, "busy\n", 5);
        if (n == 1 && p % 4 == 1) {
            const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n";
            send_all(fd, head, strlen(head));
            send_all(fd, body, 20);
            reset_connection(fd);
            return false;
        }
        if (n == 1 && p % 4 == 2)
            return false;
        if (n == 2 && p % 8 == 0)
            return respond(fd, 500, "Internal Server Error", NULL, "oops\n", 5);
        return respond(fd, 200, "OK", NULL, body, blen);
    }
    respond(fd, 400, "Bad Request", NULL, "", 0);
    return false;
}

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    size_t have = 0;
    for (;;) {
        char *end;
        buf[have] = '\0';
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            if (have >= sizeof(buf) - 1)
                goto out;
            ssize_t n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
            if (n <= 0)
                goto out;
            have += (size_t)n;
            buf[have] = '\0';
        }
        size_t used = (size_t)(end + 4 - buf);
        char req[16384];
        memcpy(req, buf, used);
        req[used] = '\0';
        memmove(buf, buf + used, have - used);
        have -= used;
        if (!serve(fd, req))
            break;
    }
out:
    close(fd);
    return NULL;
}

/* A listening socket on 127.0.0.1:port (0: a free one, reported in *port);
 * -1 on failure. */
static int listen_on(int *port)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        return -1;
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 128) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) < 0) {
        close(ls);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return ls;
}

/* The port held while the server is down: a socket bound to it and not
 * listening refuses connections as a closed port does, and keeps the port
 * from being taken meanwhile. A port given back would be free for any
 * outgoing connection's ephemeral port: a client's connection to this very
 * port would then connect to itself (TCP simultaneous open) and hold it,
 * and the server could not listen again while it lasts. -1 if it fails. */
static int hold_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: faultserver STATEDIR\n");
        return 2;
    }
    state_dir = argv[1];
    signal(SIGPIPE, SIG_IGN);

    int port = 0;
    int ls = listen_on(&port);
    if (ls < 0) {
        perror("faultserver: listen");
        return 1;
    }
    printf("%d\n", port);
    fflush(stdout);

    int hold = -1; /* while down: the port, bound and not listening */
    for (;;) {
        /* STATEDIR/refuse: down (nothing listens) until it goes */
        bool refuse = state_file_exists("refuse");
        if (refuse && ls >= 0) {
            close(ls);
            ls = -1;
            hold = hold_port(port);
        } else if (!refuse && ls < 0) {
            if (hold >= 0)
                close(hold);
            hold = -1;
            ls = listen_on(&port); /* may fail for a while: tried again below */
        }
        struct pollfd pfd = {.fd = ls, .events = POLLIN};
        int n = poll(&pfd, ls >= 0 ? 1 : 0, 20);
        if (n <= 0 || ls < 0)
            continue;
        int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
                continue;
            perror("faultserver: accept");
            return 1;
        }
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, conn_thread, (void *)(intptr_t)fd) != 0)
            close(fd);
        pthread_attr_destroy(&attr);
    }
}

/* SPDX-License-Identifier: MIT */
/* Conditional and resumable fetch of one file with libcurl (fetch_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"
#include "fetch_file.h"
#include "core/util.h"

typedef struct xfer {
    CURL *curl;
    int fd;
    uint64_t offset; /* bytes already in the file that a 206 continues */
    bool decided;    /* the first body byte chose between append and rewrite */
    bool resumed;
    uint64_t received, max;
    const br_fetch_opts *o;
    bool head_done; /* o->check_head was called */
    uint64_t limit; /* the whole file's size check_head allows; 0: none */
    br_fetch_validators got;
    bool range_ok; /* a Content-Range that starts at offset */
    int fail;      /* our own failure in a callback: -errno */
    char reason[160];
} xfer;

static bool is_file_url(const char *url)
{
    return strncasecmp(url, "file://", 7) == 0;
}

/* A header line: the status line of each response (redirects included)
 * resets what an earlier one said. */
static size_t on_header(char *buf, size_t size, size_t n, void *ctx)
{
    xfer *x = ctx;
    size_t len = size * n;
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        x->got.etag[0] = '\0';
        x->range_ok = false;
    } else if (len > 5 && strncasecmp(buf, "ETag:", 5) == 0) {
        const char *v = buf + 5;
        size_t vl = len - 5;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        bool printable = vl < sizeof(x->got.etag);
        for (size_t i = 0; i < vl && printable; i++)
            printable = v[i] > 0x20 && v[i] < 0x7f;
        if (printable) {
            memcpy(x->got.etag, v, vl);
            x->got.etag[vl] = '\0';
        }
    } else if (len > 14 && strncasecmp(buf, "Content-Range:", 14) == 0) {
        unsigned long long start;
        x->range_ok = sscanf(buf + 14, " bytes %llu-", &start) == 1 && start == x->offset;
    }
    return len;
}

/* The first body byte decides: a 206 that continues at offset appends,
 * anything else rewrites the file from its start. */
static int decide(xfer *x)
{
    long code = 0;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
    x->decided = true;
    x->resumed = code == 206 && x->range_ok && x->offset > 0;
    if (code == 206 && !x->resumed) {
        snprintf(x->reason, sizeof(x->reason),
                 "a partial answer (206) that does not start at "
                 "byte %" PRIu64,
                 x->offset);
        return -EIO;
    }
    uint64_t at = x->resumed ? x->offset : 0;
    if (ftruncate(x->fd, (off_t)at) < 0 || lseek(x->fd, (off_t)at, SEEK_SET) < 0) {
        snprintf(x->reason, sizeof(x->reason), "%s", strerror(errno));
        return -errno;
    }
    return 0;
}

/* Once the file's first o->head_len bytes are there (received now or kept
 * from the partial body): o->check_head may stop the transfer or bound it. */
static int check_head(xfer *x)
{
    const br_fetch_opts *o = x->o;
    x->head_done = true;
    uint8_t *head = malloc(o->head_len);
    if (!head)
        return -ENOMEM;
    int r = -EIO;
    if (pread(x->fd, head, o->head_len, 0) == (ssize_t)o->head_len)
        r = o->check_head(o->check_ctx, head, o->head_len, &x->limit, x->reason, sizeof(x->reason));
    else
        snprintf(x->reason, sizeof(x->reason), "reading back its first bytes: %s", strerror(errno));
    free(head);
    return r;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ctx)
{
    xfer *x = ctx;
    size_t len = size * n;
    if (!x->decided && (x->fail = decide(x)) < 0)
        return 0;
    uint64_t at = (x->resumed ? x->offset : 0) + x->received; /* bytes in the file */
    if (x->max && x->received + len > x->max) {
        x->fail = -EFBIG;
        snprintf(x->reason, sizeof(x->reason), "larger than %" PRIu64 " bytes", x->max);
        return 0;
    }
    if (x->limit && at + len > x->limit) {
        x->fail = -EFBIG;
        snprintf(x->reason, sizeof(x->reason),
                 "more than the %" PRIu64 " bytes its header declares: stopped there", x->limit);
        return 0;
    }
    int r = br_write_all(x->fd, buf, len);
    if (r < 0) {
        x->fail = r;
        snprintf(x->reason, sizeof(x->reason), "writing: %s", strerror(-r));
        return 0;
    }
    x->received += len;
    if (x->o->check_head && !x->head_done && at + len >= x->o->head_len) {
        if ((r = check_head(x)) < 0 || (x->limit && at + len > x->limit)) {
            x->fail = r < 0 ? r : -EFBIG;
            if (r == 0)
                snprintf(x->reason, sizeof(x->reason),
                         "more than the %" PRIu64 " bytes its header declares: stopped there",
                         x->limit);
            return 0;
        }
    }
    return len;
}

static void http_date(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&tt, &tm));
}

/* The request's headers: validators of the installed copy, and a range
 * continuing the partial one. */
static struct curl_slist *request_headers(const br_fetch_opts *o, xfer *x, bool resume)
{
    struct curl_slist *h = NULL;
    char line[320];
    bool file = is_file_url(o->url);
    if (o->have && o->have->etag[0] && !file) {
        snprintf(line, sizeof(line), "If-None-Match: %s", o->have->etag);
        h = curl_slist_append(h, line);
    }
    if (o->have && o->have->last_modified >= 0) {
        curl_easy_setopt(x->curl, CURLOPT_TIMECONDITION, (long)CURL_TIMECOND_IFMODSINCE);
        curl_easy_setopt(x->curl, CURLOPT_TIMEVALUE_LARGE, (curl_off_t)o->have->last_modified);
    }
    if (resume) {
        char date[64];
        if (o->partial->etag[0]) {
            snprintf(line, sizeof(line), "If-Range: %s", o->partial->etag);
        } else {
            http_date(o->partial->last_modified, date, sizeof(date));
            snprintf(line, sizeof(line), "If-Range: %s", date);
        }
        h = curl_slist_append(h, line);
        char range[32];
        snprintf(range, sizeof(range), "%" PRIu64 "-", x->offset);
        curl_easy_setopt(x->curl, CURLOPT_RANGE, range);
    }
    return h;
}

static void set_options(CURL *c, const br_fetch_opts *o, xfer *x)
{
    curl_easy_setopt(c, CURLOPT_URL, o->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FILETIME, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "breachctl/" BREACHD_VERSION);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(o->connect_timeout_ms ? o->connect_timeout_ms : 10000));
    long stall = (long)((o->stall_timeout_ms ? o->stall_timeout_ms : 60000) + 999) / 1000;
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
#if LIBCURL_VERSION_NUM >= 0x075700
    /* A name lookup still running when the connect timeout ends the
     * transfer (a DNS server that never answers) is left to finish on its
     * own thread: without this the cleanup joins that thread, and the
     * command waits past its timeout until the system resolver gives up
     * (CURLOPT_QUICK_EXIT(3); docs/upstream.md, "What is an error, and
     * what is cached"). */
    curl_easy_setopt(c, CURLOPT_QUICK_EXIT, 1L);
#endif
    if (o->max_bytes)
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
    if (o->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
    /* decoded as it arrives; never with a partial body, whose Range counts
     * the decoded bytes (CURLOPT_ACCEPT_ENCODING(3)) */
    if (o->accept_gzip && !o->partial)
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
}

static int curl_failure(const br_fetch_opts *o, CURLcode cc, const xfer *x, long code,
                        br_error *err)
{
    if (x->fail)
        return br_error_set(err, x->fail, "%s: %s", o->url, x->reason);
    if (cc == CURLE_HTTP_RETURNED_ERROR)
        return br_error_set(err, code == 404 ? -ENOENT : -EIO, "%s: HTTP %ld", o->url, code);
    int r = cc == CURLE_OPERATION_TIMEDOUT       ? -ETIMEDOUT
            : cc == CURLE_FILESIZE_EXCEEDED      ? -EFBIG
            : cc == CURLE_FILE_COULDNT_READ_FILE ? -ENOENT
            : cc == CURLE_REMOTE_FILE_NOT_FOUND  ? -ENOENT
                                                 : -EIO;
    return br_error_set(err, r, "%s: %s", o->url, curl_easy_strerror(cc));
}

/* One transfer. *range_refused: a resumed request answered 416. */
static int transfer(int fd, const br_fetch_opts *o, bool resume, br_fetch_result *res,
                    bool *range_refused, br_error *err)
{
    CURL *c = curl_easy_init();
    if (!c)
        return br_error_set(err, -ENOMEM, "%s: libcurl: out of memory", o->url);
    struct stat st;
    xfer x = {.curl = c, .fd = fd, .max = o->max_bytes, .o = o};
    x.offset = resume && fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    x.got.last_modified = -1;
    set_options(c, o, &x);
    struct curl_slist *h = request_headers(o, &x, resume && x.offset > 0);
    if (h)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode cc = curl_easy_perform(c);
    long code = 0, unmet = 0;
    curl_off_t ft = -1;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(c, CURLINFO_CONDITION_UNMET, &unmet);
    curl_easy_getinfo(c, CURLINFO_FILETIME_T, &ft);
    x.got.last_modified = ft >= 0 ? (int64_t)ft : -1;
    res->got = x.got;
    res->http_code = code;
    res->received = x.received;
    res->resumed = x.resumed;
    int r = 0;
    *range_refused = cc == CURLE_HTTP_RETURNED_ERROR && code == 416;
    if (cc != CURLE_OK)
        r = curl_failure(o, cc, &x, code, err);
    else if (code == 304 || unmet)
        res->status = BR_FETCH_NOT_MODIFIED;
    else if (!x.decided && (x.fail = decide(&x)) < 0) /* an empty body */
        r = br_error_set(err, x.fail, "%s: %s", o->url, x.reason);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (r == 0 && res->status == BR_FETCH_NEW && fstat(fd, &st) == 0)
        res->size = (uint64_t)st.st_size;
    return r;
}

/* The output file, never through a link planted in its directory: a
 * partial body is continued only when it is a regular file of this uid with
 * one name that no one else may write; anything else at path (a symbolic
 * link, another user's file) is removed and path created anew, O_EXCL. */
static int open_output(const char *path, bool partial, br_error *err)
{
    if (partial) {
        int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            st.st_nlink == 1 && !(st.st_mode & (S_IWGRP | S_IWOTH)) && fcntl(fd, F_SETFL, 0) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
    }
    for (int tries = 0; tries < 2; tries++) {
        if (unlink(path) < 0 && errno != ENOENT)
            return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 && fchmod(fd, 0644) == 0)
            return fd;
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (e != EEXIST)
            return br_error_set(err, -e, "%s: %s", path, strerror(e));
    }
    return br_error_set(err, -EEXIST, "%s: created again by someone else at once", path);
}

int br_fetch_file(const char *path, const br_fetch_opts *o, br_fetch_result *res, br_error *err)
{
    memset(res, 0, sizeof(*res));
    res->got.last_modified = -1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return br_error_set(err, -EIO, "libcurl: initialization failed");
    bool resume = o->partial && !is_file_url(o->url) &&
                  (o->partial->etag[0] || o->partial->last_modified >= 0);
    int fd = open_output(path, resume, err);
    if (fd < 0) {
        curl_global_cleanup();
        return fd;
    }
    bool refused = false;
    int r = transfer(fd, o, resume, res, &refused, err);
    if (r < 0 && resume && refused)
        r = transfer(fd, o, false, res, &refused, err); /* start over */
    if (r == 0 && res->status == BR_FETCH_NEW && fsync(fd) < 0)
        r = br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    /* clean after the fsync: dropped, read back in large folios */
    if (r == 0 && res->status == BR_FETCH_NEW && o->drop_cache)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    curl_global_cleanup();
    return r;
}

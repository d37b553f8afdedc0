/* SPDX-License-Identifier: MIT */
/* The grace state of login_action=grace=N (pam_breachd(8), GRACE STATE):
 * one "user YYYY-MM-DD" line per user whose password failed the check at
 * login, the UTC day it first did; no hash, no count, nothing else.
 *
 * The file is root's, mode 0600, in a directory that is root's and reachable
 * by root only (mode 0700; made when missing): no other user can read the
 * state, or open the directory to take its lock. It is replaced whole: a new
 * file beside it (random name, O_EXCL, never through a symlink), fsync,
 * renameat, fsync of the directory. A lock on the directory (flock)
 * serializes concurrent logins. A state file that is not a regular file
 * with one link, owned by root or the effective user and writable by nobody
 * else, is refused, as is a directory reachable by others.
 *
 * No fault of the state restarts a grace period: a lock still held after 2 s
 * (by root: nobody else can take it) leaves the file as it is and counts
 * from the day it holds (read without the lock: the file is only ever
 * renamed into place); a state that cannot be used counts the period as
 * over. Either is logged with what happened. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "pam_breachd.h"
#include "core/random.h"

#define STATE_MAX (16u << 20)
#define LOCK_WAIT_MS 2000
#define USER_MAX 256
#define DATE_LEN 10 /* YYYY-MM-DD */

/* A user name that fits a line: no space, no control character. */
static bool valid_user(const char *u, size_t len)
{
    if (len == 0 || len > USER_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)u[i] <= 0x20 || u[i] == 0x7f)
            return false;
    return true;
}

static void day_text(int64_t day, char out[DATE_LEN + 1])
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, DATE_LEN + 1, "%Y-%m-%d", &tm) != DATE_LEN)
        snprintf(out, DATE_LEN + 1, "1970-01-01");
}

/* "YYYY-MM-DD" (exactly) to days since the epoch; false if not a real day. */
/* The value of n decimal digits (checked by the caller); no NUL needed. */
static int digits(const char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

static bool parse_day(const char *s, int64_t *day)
{
    static const char shape[] = "dddd-dd-dd";
    for (size_t i = 0; i < DATE_LEN; i++)
        if (shape[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != '-')
            return false;
    struct tm tm = {0};
    /* Fixed widths: the last line of the file need not end in a NUL. */
    tm.tm_year = digits(s, 4) - 1900;
    tm.tm_mon = digits(s + 5, 2) - 1;
    tm.tm_mday = digits(s + 8, 2);
    time_t t = timegm(&tm);
    char back[DATE_LEN + 1];
    if (t < 0)
        return false;
    *day = (int64_t)t / 86400;
    day_text(*day, back);
    return memcmp(back, s, DATE_LEN) == 0;
}

/* One line (without its LF): the user name's length and the day. */
static bool parse_line(const char *line, size_t len, size_t *ulen, int64_t *day)
{
    const char *sp = memchr(line, ' ', len);
    if (!sp || (size_t)(line + len - sp - 1) != DATE_LEN)
        return false;
    *ulen = (size_t)(sp - line);
    return valid_user(line, *ulen) && parse_day(sp + 1, day);
}

/* The directory of the state, opened: root's (or the effective user's) and
 * reachable by its owner only, checked on what was opened (fstat), not by
 * name. A missing one is made (mode 0700) when add. */
static int open_dir(const char *dir, bool add, const char **what)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && add) {
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return *what = "cannot make its directory", -errno;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0)
        return *what = "cannot open its directory", -errno;
    struct stat st;
    int r = 0;
    if (fstat(fd, &st) < 0)
        r = -errno, *what = "cannot stat its directory";
    else if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 077))
        r = -EPERM, *what = "its directory must be root's and reachable by root only (mode 0700)";
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

static int lock_dir(int dirfd)
{
    for (int waited = 0;; waited += 10) {
        if (flock(dirfd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
            return -errno;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}

/* The whole state file into *data (NULL when there is none). */
static int read_state(int dirfd, const char *base, char **data, size_t *len, const char **what)
{
    *data = NULL, *len = 0;
    int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : (*what = "cannot open it", -errno);
    struct stat st;
    int r = 0;
    if (fstat(fd, &st) < 0)
        r = -errno, *what = "cannot stat it";
    else if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
        r = -EINVAL, *what = "not a regular file with one link";
    else if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022))
        r = -EPERM, *what = "owned by another user, or writable by others";
    else if ((uint64_t)st.st_size > STATE_MAX)
        r = -EFBIG, *what = "too large";
    else if (!(*data = malloc((size_t)st.st_size + 1)))
        r = -ENOMEM, *what = "out of memory";
    while (r == 0 && *len < (size_t)st.st_size) {
        ssize_t n = read(fd, *data + *len, (size_t)st.st_size - *len);
        if (n <= 0)
            r = n < 0 ? -errno : -EIO, *what = "cannot read it";
        else
            *len += (size_t)n;
    }
    close(fd);
    if (r < 0) {
        free(*data);
        *data = NULL;
    } else if (*data) {
        (*data)[*len] = '\0';
    }
    return r;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        buf += n, len -= (size_t)n;
    }
    return 0;
}

/* Replace the state file with buf: a new file, then renameat. */
static int write_state(int dirfd, const char *base, const char *buf, size_t len, const char **what)
{
    unsigned char rnd[8];
    char tmp[NAME_MAX + 1];
    if (br_random_bytes(rnd, sizeof(rnd)) < 0)
        return *what = "no random bytes", -EIO;
    int n = snprintf(tmp, sizeof(tmp), ".%s.%02x%02x%02x%02x%02x%02x%02x%02x", base, rnd[0], rnd[1],
                     rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return *what = "name too long", -ENAMETOOLONG;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return *what = "cannot create a new file beside it", -errno;
    int r = fchmod(fd, 0600) < 0 ? -errno : write_all(fd, buf, len);
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r < 0)
        *what = "cannot write the new file";
    else if (renameat(dirfd, tmp, dirfd, base) < 0)
        r = -errno, *what = "cannot rename the new file into place";
    if (r < 0)
        unlinkat(dirfd, tmp, 0);
    else if (fsync(dirfd) < 0)
        r = -errno, *what = "cannot sync the directory";
    return r;
}

typedef struct grace_op {
    const char *user;
    size_t ulen;
    bool add;      /* first_seen: add the user's line when missing */
    int64_t today; /* for add */
    bool locked;   /* the lock is held: the file may be written */
    bool found;
    int64_t first; /* the day of the user's line, when found */
} grace_op;

/* Copy the valid lines of in to out (sized len + a line), without the
 * user's; note it in op. Returns the length of out. */
static size_t filter_lines(pam_handle_t *pamh, const char *in, size_t len, char *out, grace_op *op)
{
    size_t o = 0, bad = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(in + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (in + i)) : len - i, ulen;
        int64_t day;
        if (!parse_line(in + i, l, &ulen, &day)) {
            bad += l > 0;
        } else if (ulen == op->ulen && memcmp(in + i, op->user, ulen) == 0) {
            op->found = true;
            op->first = day;
        } else {
            memcpy(out + o, in + i, l);
            out[o + l] = '\n';
            o += l + 1;
        }
        i += l + 1;
    }
    if (bad)
        pb_syslog(pamh, LOG_WARNING, "grace state: %zu malformed line(s) dropped", bad);
    return o;
}

/* Under the lock: read, find the user's line, write back when it changes.
 * Without it (op->locked false): read and find only. */
static int update(pam_handle_t *pamh, int dirfd, const char *base, grace_op *op, const char **what)
{
    char *in = NULL;
    size_t len = 0;
    int r = read_state(dirfd, base, &in, &len, what);
    if (r < 0)
        return r;
    char *out = malloc(len + 1 + USER_MAX + 1 + DATE_LEN + 2); /* + a final LF, + a line */
    if (!out) {
        free(in);
        return *what = "out of memory", -ENOMEM;
    }
    size_t o = filter_lines(pamh, in ? in : "", len, out, op);
    r = 0;
    if ((op->found && op->add) || !op->locked) {
        if (!op->found && op->add)
            op->first = op->today; /* a first day, not written down yet */
    } else if (op->add) {
        char d[DATE_LEN + 1];
        day_text(op->today, d);
        o += (size_t)sprintf(out + o, "%.*s %s\n", (int)op->ulen, op->user, d);
        op->first = op->today;
        r = write_state(dirfd, base, out, o, what);
    } else if (op->found) {
        r = write_state(dirfd, base, out, o, what);
    }
    free(in);
    free(out);
    return r;
}

/* The lock, or after LOCK_WAIT_MS the state read as it is (1, logged). */
static int lock_or_read(pam_handle_t *pamh, const char *path, int dirfd, const char *base,
                        grace_op *op, const char **what)
{
    int r = lock_dir(dirfd);
    if (r == 0) {
        op->locked = true;
        return update(pamh, dirfd, base, op, what);
    }
    if (r != -EWOULDBLOCK)
        return *what = "cannot lock its directory", r;
    if ((r = update(pamh, dirfd, base, op, what)) < 0)
        return r;
    pb_syslog(pamh, LOG_WARNING,
              "grace state %s: locked by another process for %d s: "
              "read without the lock, not updated",
              path, LOCK_WAIT_MS / 1000);
    return 1;
}

/* 0 done, 1 read but not updated (locked), -errno (logged with then). */
static int grace_run(pam_handle_t *pamh, const char *path, grace_op *op, const char *then)
{
    const char *what = NULL;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int r = 0, dirfd = -1;
    op->ulen = strlen(op->user);
    if (!valid_user(op->user, op->ulen))
        r = -EINVAL, what = "the user name cannot be stored";
    else if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(dir))
        r = -EINVAL, what = "not a file path";
    if (r == 0) {
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
        dirfd = open_dir(dir, op->add, &what);
        if (dirfd == -ENOENT && !op->add)
            return 0; /* no directory, no line to remove */
        r = dirfd < 0 ? dirfd : lock_or_read(pamh, path, dirfd, slash + 1, op, &what);
    }
    if (dirfd >= 0)
        close(dirfd); /* and the lock */
    if (r < 0)
        pb_syslog(pamh, LOG_ERR, "grace state %s: %s: %s: %s", path, what, strerror(-r), then);
    return r;
}

int pb_grace_first_seen(pam_handle_t *pamh, const char *path, const char *user, int64_t today,
                        int64_t *first)
{
    grace_op op = {.user = user, .add = true, .today = today};
    int r = grace_run(pamh, path, &op, "the grace period counts as over until this is fixed");
    if (r >= 0)
        *first = op.first;
    return r < 0 ? r : 0;
}

int pb_grace_forget(pam_handle_t *pamh, const char *path, const char *user)
{
    grace_op op = {.user = user};
    int r = grace_run(pamh, path, &op, "the user's line stays");
    if (r == 1 && op.found)
        return -EWOULDBLOCK; /* found, not removed */
    return r < 0 ? r : op.found;
}

/* SPDX-License-Identifier: MIT */
/* The download index, its journal and the session file (docs/corpus.md,
 * "Files in the output directory").
 *
 * Index and journal: text, one record a line, fields separated by a tab:
 *
 *   PREFIX SIZE MTIME_NS HASH ETAG LAST_MODIFIED CHECK
 *
 * PREFIX 5 uppercase hex; SIZE the file's bytes; MTIME_NS its modification
 * time in ns since the epoch; HASH the first 16 bytes of its SHA-256 in 32
 * lowercase hex; ETAG and LAST_MODIFIED as the upstream sent them (empty when
 * absent; neither can hold a tab or a control character); CHECK 8 lowercase
 * hex, the FNV-1a 32-bit hash of every byte of the line before it (its
 * preceding tab included). Both files start with a header line
 * "breachd-download-index TAB 1 TAB UPSTREAM-TEMPLATE TAB CHECK". A line that
 * does not check out (a torn append after a crash) is ignored: its prefix is
 * then simply fetched again. The journal's records override the index's;
 * compaction writes index + journal to a new index (temp, fsync, rename,
 * fsync DIR) and then removes the journal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "download_int.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/util.h"

#define INDEX_TMP BR_DOWNLOAD_INDEX_NAME ".tmp"
#define SESSION_TMP BR_DOWNLOAD_SESSION_NAME ".tmp"
#define SESSION_HEAD 24 /* magic 8, flags 1, pad 7, start 8 */
#define SESSION_BITS (DL_NPREFIX / 8)
#define SESSION_SIZE (SESSION_HEAD + SESSION_BITS + 4)

static uint32_t fnv1a(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

void dl_name_final(uint32_t p, char out[16])
{
    snprintf(out, 16, "%05X.txt", p & 0xFFFFF);
}

void dl_name_temp(uint32_t p, char out[24])
{
    snprintf(out, 24, DL_TMP_PREFIX "%05X" DL_TMP_SUFFIX, p & 0xFFFFF);
}

char *dl_val_make(const char *etag, const char *lm)
{
    etag = etag ? etag : "";
    lm = lm ? lm : "";
    if (!*etag && !*lm)
        return NULL;
    size_t a = strlen(etag), b = strlen(lm);
    char *v = malloc(a + b + 2);
    if (!v)
        return NULL;
    memcpy(v, etag, a + 1);
    memcpy(v + a + 1, lm, b + 1);
    return v;
}

size_t dl_index_line(uint32_t p, const dl_entry *e, char *out, size_t cap)
{
    char hex[DL_HASH_LEN * 2 + 1];
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < DL_HASH_LEN; i++) {
        hex[2 * i] = d[e->hash[i] >> 4];
        hex[2 * i + 1] = d[e->hash[i] & 15];
    }
    hex[DL_HASH_LEN * 2] = '\0';
    int n = snprintf(out, cap, "%05X\t%" PRIu64 "\t%" PRId64 "\t%s\t%s\t%s\t", p, e->size,
                     e->mtime_ns, hex, dl_entry_etag(e), dl_entry_lm(e));
    if (n < 0 || (size_t)n + 10 > cap)
        return 0;
    n += snprintf(out + n, cap - (size_t)n, "%08x\n", fnv1a(out, (size_t)n));
    return (size_t)n;
}

static size_t header_line(const char *upstream, char *out, size_t cap)
{
    int n = snprintf(out, cap, DL_INDEX_MAGIC "\t1\t%s\t", upstream);
    if (n < 0 || (size_t)n + 10 > cap)
        return 0;
    n += snprintf(out + n, cap - (size_t)n, "%08x\n", fnv1a(out, (size_t)n));
    return (size_t)n;
}

/* Split a line (no newline) at tabs; true when the check field matches and
 * there are exactly nf fields. The line is only modified when true. */
static bool line_fields(char *line, size_t len, char **f, size_t nf)
{
    char *last_tab = memrchr(line, '\t', len);
    if (!last_tab || line + len - (last_tab + 1) != 8)
        return false;
    char want[9];
    snprintf(want, sizeof(want), "%08x", fnv1a(line, (size_t)(last_tab + 1 - line)));
    if (memcmp(want, last_tab + 1, 8) != 0)
        return false;
    /* Count the fields before cutting anything: a line that is not split
     * stays intact (the first line is tried as the header, then as a record).
     * No field holds a control byte: a line with one is corrupt, and a NUL
     * would silently cut a field short. */
    size_t tabs = 0;
    for (const char *p = line; p < last_tab; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\t')
            tabs++;
        else if (c < 0x20 || c == 0x7f)
            return false;
    }
    if (tabs + 1 != nf)
        return false;
    *last_tab = '\0';
    size_t k = 0;
    char *s = line;
    for (;;) {
        if (k == nf)
            return false;
        f[k++] = s;
        char *t = strchr(s, '\t');
        if (!t)
            break;
        *t = '\0';
        s = t + 1;
    }
    return k == nf;
}

static bool parse_dec(const char *s, bool neg_ok, int64_t *out)
{
    bool neg = false;
    if (neg_ok && *s == '-') {
        neg = true;
        s++;
    }
    if (!*s || strlen(s) > 19)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* Apply one record line; false when it is not a valid record. */
static bool apply_record(dl_index *ix, char *line, size_t len, bool keep_validators)
{
    char *f[6];
    if (!line_fields(line, len, f, 6))
        return false;
    if (strlen(f[0]) != 5 || strlen(f[3]) != DL_HASH_LEN * 2)
        return false;
    uint8_t pb[3];
    char p6[6] = {'0', f[0][0], f[0][1], f[0][2], f[0][3], f[0][4]};
    if (!br_hex_decode(p6, 3, pb))
        return false;
    uint32_t p = ((uint32_t)pb[0] << 16) | ((uint32_t)pb[1] << 8) | pb[2];
    int64_t size, mtime;
    uint8_t hash[DL_HASH_LEN];
    if (!parse_dec(f[1], false, &size) || !parse_dec(f[2], true, &mtime) ||
        !br_hex_decode(f[3], DL_HASH_LEN, hash))
        return false;
    dl_entry *e = &ix->e[p];
    free(e->val);
    e->val = keep_validators ? dl_val_make(f[4], f[5]) : NULL;
    e->size = (uint64_t)size;
    e->mtime_ns = mtime;
    memcpy(e->hash, hash, DL_HASH_LEN);
    e->state = DL_E_RECORD;
    return true;
}

/* Read one index-format file; *records set. Missing file: 0. */
static int load_file(dl_index *ix, const char *name, uint64_t *records, uint64_t *bytes,
                     br_error *err)
{
    *records = 0;
    int fd = openat(ix->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return br_error_set(err, -errno, "%s: %s", name, strerror(errno));
    }
    if (strcmp(name, BR_DOWNLOAD_INDEX_NAME) == 0)
        ix->index_exists = true;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    bool header = true, keep = false;
    uint64_t total = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        total += (uint64_t)n;
        if (line[n - 1] != '\n') { /* torn last line */
            ix->bad_lines++;
            break;
        }
        line[--n] = '\0';
        if (header) {
            header = false;
            char *hf[3];
            if (line_fields(line, (size_t)n, hf, 3) && strcmp(hf[0], DL_INDEX_MAGIC) == 0 &&
                strcmp(hf[1], "1") == 0) {
                keep = strcmp(hf[2], ix->upstream) == 0;
                if (!keep)
                    ix->rewrite = true;
                continue;
            }
            ix->bad_lines++; /* no usable header: records kept, validators not */
        }
        if (apply_record(ix, line, (size_t)n, keep))
            (*records)++;
        else
            ix->bad_lines++;
    }
    if (ix->bad_lines)
        ix->rewrite = true;
    int rc = ferror(f) ? -EIO : 0;
    free(line);
    fclose(f);
    if (bytes)
        *bytes = total;
    if (rc < 0)
        return br_error_set(err, rc, "%s: read error", name);
    return 0;
}

int dl_index_load(dl_index *ix, int dirfd, const char *upstream, br_error *err)
{
    memset(ix, 0, sizeof(*ix));
    ix->dirfd = dirfd;
    ix->jfd = -1;
    ix->e = calloc(DL_NPREFIX, sizeof(*ix->e));
    ix->bits = calloc(DL_NPREFIX / 64, sizeof(uint64_t));
    ix->placed = calloc(DL_NPREFIX / 64, sizeof(uint64_t));
    ix->upstream = strdup(upstream);
    if (!ix->e || !ix->bits || !ix->placed || !ix->upstream)
        return br_error_set(err, -ENOMEM, "index: out of memory");
    uint64_t base_records;
    int rc = load_file(ix, BR_DOWNLOAD_INDEX_NAME, &base_records, NULL, err);
    if (rc < 0)
        return rc;
    rc = load_file(ix, BR_DOWNLOAD_JOURNAL_NAME, &ix->jrecords, &ix->jbytes, err);
    if (rc < 0)
        return rc;
    return 0;
}

void dl_index_check_files(dl_index *ix, uint32_t first, uint32_t last)
{
    for (uint32_t p = first; p <= last; p++) {
        dl_entry *e = &ix->e[p];
        if (e->state == DL_E_NONE)
            continue;
        /* linked by us after syncfs, the directory fsynced: a stat of each of
         * a million new files would add ~1 s to the end of a full run */
        if (dl_placed_has(ix, p)) {
            e->state = DL_E_OK;
            continue;
        }
        char name[16];
        dl_name_final(p, name);
        struct stat st;
        if (fstatat(ix->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (uint64_t)st.st_size == e->size &&
            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == e->mtime_ns)
            e->state = DL_E_OK;
        else
            e->state = DL_E_RECORD;
    }
}

static int write_index_file(dl_index *ix, int fd)
{
    size_t cap = 1 << 20, off = 0;
    _cleanup_free_ char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    off = header_line(ix->upstream, buf, cap);
    if (!off)
        return -EINVAL;
    for (uint32_t p = 0; p < DL_NPREFIX; p++) {
        const dl_entry *e = &ix->e[p];
        if (e->state == DL_E_NONE)
            continue;
        if (cap - off < 1024) {
            int rc = br_write_all(fd, buf, off);
            if (rc < 0)
                return rc;
            off = 0;
        }
        size_t n = dl_index_line(p, e, buf + off, cap - off);
        if (!n)
            return -EINVAL;
        off += n;
    }
    return br_write_all(fd, buf, off);
}

int dl_index_compact(dl_index *ix, br_error *err)
{
    int fd = openat(ix->dirfd, INDEX_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", INDEX_TMP, strerror(errno));
    int rc = write_index_file(ix, fd);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(ix->dirfd, INDEX_TMP, ix->dirfd, BR_DOWNLOAD_INDEX_NAME) < 0)
        rc = -errno;
    if (rc == 0 && fsync(ix->dirfd) < 0)
        rc = -errno;
    if (rc < 0) {
        unlinkat(ix->dirfd, INDEX_TMP, 0);
        return br_error_set(err, rc, "writing the index %s: %s", BR_DOWNLOAD_INDEX_NAME,
                            strerror(-rc));
    }
    /* Everything the journal held is in the index now. */
    if (ix->jfd >= 0) {
        close(ix->jfd);
        ix->jfd = -1;
    }
    unlinkat(ix->dirfd, BR_DOWNLOAD_JOURNAL_NAME, 0);
    ix->jbytes = 0;
    ix->jrecords = 0;
    ix->index_exists = true;
    return 0;
}

int dl_index_promote_journal(dl_index *ix, br_error *err)
{
    if (ix->index_exists || ix->rewrite || ix->jfd < 0)
        return dl_index_compact(ix, err);
    /* every append was fdatasync'ed */
    if (renameat(ix->dirfd, BR_DOWNLOAD_JOURNAL_NAME, ix->dirfd, BR_DOWNLOAD_INDEX_NAME) < 0 ||
        fsync(ix->dirfd) < 0)
        return br_error_set(err, -errno, "%s: %s", BR_DOWNLOAD_INDEX_NAME, strerror(errno));
    close(ix->jfd);
    ix->jfd = -1;
    ix->jbytes = 0;
    ix->jrecords = 0;
    ix->index_exists = true;
    return 0;
}

int dl_index_journal_open(dl_index *ix, br_error *err)
{
    if (ix->jfd >= 0)
        return 0;
    int fd = openat(ix->dirfd, BR_DOWNLOAD_JOURNAL_NAME, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                    0644);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", BR_DOWNLOAD_JOURNAL_NAME, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return br_error_set(err, -e, "%s: %s", BR_DOWNLOAD_JOURNAL_NAME, strerror(e));
    }
    if (st.st_size == 0) {
        char head[512];
        size_t n = header_line(ix->upstream, head, sizeof(head));
        int rc = n ? br_write_all(fd, head, n) : -EINVAL;
        if (rc < 0) {
            close(fd);
            return br_error_set(err, rc, "%s: %s", BR_DOWNLOAD_JOURNAL_NAME, strerror(-rc));
        }
    }
    ix->jfd = fd;
    return 0;
}

int dl_index_journal_append(dl_index *ix, const char *buf, size_t len)
{
    if (ix->jfd < 0)
        return -EBADF;
    int rc = br_write_all(ix->jfd, buf, len);
    if (rc == 0 && fdatasync(ix->jfd) < 0)
        rc = -errno;
    if (rc == 0)
        ix->jbytes += len;
    return rc;
}

void dl_index_free(dl_index *ix)
{
    if (ix->e) {
        for (uint32_t p = 0; p < DL_NPREFIX; p++)
            free(ix->e[p].val);
        free(ix->e);
    }
    if (ix->jfd >= 0)
        close(ix->jfd);
    free(ix->bits);
    free(ix->placed);
    free(ix->upstream);
    memset(ix, 0, sizeof(*ix));
    ix->jfd = -1;
}

/* ---- session ---------------------------------------------------------------- */

static int64_t wall_ns(void)
{
    struct timespec ts;
    br_clock_now_real_ts(&ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool session_read(dl_index *ix)
{
    int fd = openat(ix->dirfd, BR_DOWNLOAD_SESSION_NAME, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    _cleanup_free_ uint8_t *buf = malloc(SESSION_SIZE + 1);
    ssize_t n = buf ? read(fd, buf, SESSION_SIZE + 1) : -1;
    close(fd);
    if (n != SESSION_SIZE || memcmp(buf, DL_SESSION_MAGIC, 8) != 0)
        return false;
    if (fnv1a((const char *)buf, SESSION_SIZE - 4) != br_load_le32(buf + SESSION_SIZE - 4))
        return false;
    ix->session_force = buf[8] & 1;
    ix->session_ntlm = (buf[8] & 2) != 0;
    ix->session_start_ns = (int64_t)br_load_le64(buf + 16);
    for (uint32_t w = 0; w < DL_NPREFIX / 64; w++)
        ix->bits[w] = br_load_le64(buf + SESSION_HEAD + 8 * w);
    return true;
}

void dl_session_begin(dl_index *ix, bool force, bool ntlm)
{
    memset(ix->bits, 0, DL_NPREFIX / 8);
    /* A session of the other corpus confirmed files of the other kind. */
    if (!force && session_read(ix) && ix->session_ntlm == ntlm) {
        ix->session_resumed = true;
        return;
    }
    memset(ix->bits, 0, DL_NPREFIX / 8);
    ix->session_resumed = false;
    ix->session_force = force;
    ix->session_ntlm = ntlm;
    ix->session_start_ns = wall_ns();
}

int dl_session_save(dl_index *ix)
{
    _cleanup_free_ uint8_t *buf = calloc(1, SESSION_SIZE);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, DL_SESSION_MAGIC, 8);
    buf[8] = (uint8_t)((ix->session_force ? 1 : 0) | (ix->session_ntlm ? 2 : 0));
    br_store_le64(buf + 16, (uint64_t)ix->session_start_ns);
    for (uint32_t w = 0; w < DL_NPREFIX / 64; w++)
        br_store_le64(buf + SESSION_HEAD + 8 * w, __atomic_load_n(&ix->bits[w], __ATOMIC_RELAXED));
    br_store_le32(buf + SESSION_SIZE - 4, fnv1a((const char *)buf, SESSION_SIZE - 4));
    int fd = openat(ix->dirfd, SESSION_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = br_write_all(fd, buf, SESSION_SIZE);
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(ix->dirfd, SESSION_TMP, ix->dirfd, BR_DOWNLOAD_SESSION_NAME) < 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(ix->dirfd, SESSION_TMP, 0);
    return rc;
}

void dl_session_remove(dl_index *ix)
{
    unlinkat(ix->dirfd, BR_DOWNLOAD_SESSION_NAME, 0);
}

/* ---- temp files -------------------------------------------------------------- */

static bool is_temp_name(const char *n)
{
    size_t len = strlen(n), pl = strlen(DL_TMP_PREFIX), sl = strlen(DL_TMP_SUFFIX);
    if (len == pl + 5 + sl && strncmp(n, DL_TMP_PREFIX, pl) == 0 &&
        strcmp(n + len - sl, DL_TMP_SUFFIX) == 0)
        return true;
    return strcmp(n, INDEX_TMP) == 0 || strcmp(n, SESSION_TMP) == 0;
}

void dl_clean_temp(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' && is_temp_name(de->d_name))
            unlinkat(dirfd, de->d_name, 0);
    }
    closedir(d);
}

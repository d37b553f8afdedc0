/* SPDX-License-Identifier: MIT */
/* The downloader's temporary files (download_int.h): which kind DIR allows
 * (anonymous ones, O_TMPFILE, linked in with AT_EMPTY_PATH or through
 * /proc/self/fd; else named DIR/.dl-XXXXX.tmp), how many open ones a batch
 * may hold, and putting one under its final name. The order that makes them
 * durable is download_writer.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "download_int.h"

#define FD_RESERVE (BR_DOWNLOAD_MAX_PARALLEL + 256) /* sockets and everything else */
#define PROBE_NAME DL_TMP_PREFIX "probe" DL_TMP_SUFFIX

/* Link an anonymous file into DIR: linkat(fd, "", AT_EMPTY_PATH) where
 * allowed (Linux >= 6.10 for the file's opener, else CAP_DAC_READ_SEARCH),
 * else through /proc/self/fd. -1 with errno. */
static int flink(int dirfd, int fd, const char *name, bool empty_path)
{
    if (empty_path)
        return linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
    char proc[40];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
}

int dl_tmp_place(int dirfd, int fd, uint32_t prefix, bool empty_path)
{
    char tmp[24], fin[16];
    dl_name_temp(prefix, tmp);
    dl_name_final(prefix, fin);
    if (fd >= 0) {
        if (flink(dirfd, fd, fin, empty_path) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
        /* replacing a file: link under the temp name, then rename over */
        unlinkat(dirfd, tmp, 0);
        if (flink(dirfd, fd, tmp, empty_path) < 0)
            return -errno;
    }
    if (renameat(dirfd, tmp, dirfd, fin) < 0)
        return -errno;
    return 0;
}

/* Can DIR take anonymous temp files linked in later with this linkat? */
static bool probe_tmpfile(int dirfd, bool empty_path)
{
    int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    unlinkat(dirfd, PROBE_NAME, 0);
    bool ok = flink(dirfd, fd, PROBE_NAME, empty_path) == 0;
    if (ok)
        unlinkat(dirfd, PROBE_NAME, 0);
    close(fd);
    return ok;
}

int dl_tmp_choose(int dirfd, br_download_temp temp, bool *tmpfile, bool *empty_path)
{
    switch (temp) {
    case BR_DOWNLOAD_TEMP_AUTO:
        *empty_path = true;
        *tmpfile = probe_tmpfile(dirfd, true);
        if (!*tmpfile) {
            *empty_path = false;
            *tmpfile = probe_tmpfile(dirfd, false);
        }
        return 0;
    case BR_DOWNLOAD_TEMP_LINK:
    case BR_DOWNLOAD_TEMP_PROC:
        *empty_path = temp == BR_DOWNLOAD_TEMP_LINK;
        *tmpfile = probe_tmpfile(dirfd, *empty_path);
        return *tmpfile ? 0 : -EOPNOTSUPP;
    case BR_DOWNLOAD_TEMP_NAMED:
        *tmpfile = false;
        return 0;
    }
    return -EINVAL;
}

uint32_t dl_tmp_batch_cap(uint32_t batch_files)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return batch_files;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t room = rl.rlim_cur > FD_RESERVE + 3 * 16 ? (rl.rlim_cur - FD_RESERVE) / 3 : 16;
    return batch_files > room ? (uint32_t)room : batch_files;
}

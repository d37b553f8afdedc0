/* SPDX-License-Identifier: MIT */
/* What the breachctl download tests (test_download.c,
 * test_download_faults.c) share: running breachctl download as a real
 * process, its output kept in files under the test's temp dir. */
#pragma once

#include <sys/types.h>

typedef struct run_out {
    int status; /* exit status, or 128 + signal */
    char *out, *err;
} run_out;
void run_free(run_out *r);

/* Where the runs' output files go (the test's temp dir, kept by the caller). */
void dl_fx_set_root(const char *root);
/* Start BREACHCTL download ARGS... (args NULL-terminated), its stdout and
 * stderr in ROOT/TAG.out and .err. */
pid_t spawn_ctl(char **args, const char *tag);
/* Wait for it: its exit status (128 + signal) and output. */
run_out wait_ctl(pid_t pid, const char *tag);
/* Both, with the arguments after tag (NULL-terminated); the result also
 * on stderr. */
run_out ctl(const char *tag, ...);

/* SPDX-License-Identifier: MIT */
/* Running breachctl download for test_download*.c (download_fx.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "download_fx.h"
#include "rtest.h"

static const char *fx_root;

void dl_fx_set_root(const char *root)
{
    fx_root = root;
}

void run_free(run_out *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

pid_t spawn_ctl(char **args, const char *tag)
{
    char *outp = rt_fmt("%s/%s.out", fx_root, tag), *errp = rt_fmt("%s/%s.err", fx_root, tag);
    char *argv[32];
    size_t n = 0;
    argv[n++] = BREACHCTL;
    argv[n++] = "download";
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    free(outp);
    free(errp);
    return pid;
}

run_out wait_ctl(pid_t pid, const char *tag)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    run_out r = {.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
    char *outp = rt_fmt("%s/%s.out", fx_root, tag), *errp = rt_fmt("%s/%s.err", fx_root, tag);
    r.out = rt_read_file(outp, NULL);
    r.err = rt_read_file(errp, NULL);
    free(outp);
    free(errp);
    return r;
}

run_out ctl(const char *tag, ...)
{
    char *args[24];
    size_t n = 0;
    va_list ap;
    va_start(ap, tag);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 23)
        args[n++] = (char *)a;
    va_end(ap);
    args[n] = NULL;
    run_out r = wait_ctl(spawn_ctl(args, tag), tag);
    fprintf(stderr, "[%s] exit %d\n  stdout: %s  stderr: %s", tag, r.status, r.out ? r.out : "",
            r.err && *r.err ? r.err : "-\n");
    return r;
}

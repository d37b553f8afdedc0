/* SPDX-License-Identifier: MIT */
/* breachd [--config FILE] [--foreground] [--pidfile FILE] [--check-config] [--version] */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/br_assert.h"
#include "config.h"
#include "canary.h"
#include "housekeeping.h"
#include "follow.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "startup.h"
#include "testclock.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: breachd [--config FILE] [--foreground] [--pidfile FILE] [--check-config]\n"
            "               [--version]\n"
            "\n"
            "The breach checker: answers whether a password (or its hash) appears in a\n"
            "data breach and whether a URL is blocklisted, on a Unix socket, from local\n"
            "filters and k-anonymity range queries.\n"
            "\n"
            "Options:\n"
            "  -c, --config FILE   configuration file (default %s)\n"
            "  -f, --foreground    stay in the foreground (systemd runs it so)\n"
            "  -p, --pidfile FILE  write the daemon's process id to FILE (removed at exit)\n"
            "      --check-config  validate the configuration and the filters, then exit\n"
            "  -h, --help          this text\n"
            "      --version       print the version and exit\n"
            "Exit status: 0 a clean stop (SIGTERM) or a valid configuration, 1 a failure,\n"
            "2 a usage error.\n"
            "See breachd(8) and breachd.conf(5).\n",
            BREACHD_CONFIG_PATH);
}

/* Classic daemon start: the parent exits with the child's verdict, sent
 * through a pipe once the child listens (or failed), so that a failing start
 * is still reported on the terminal. Returns the write end in the child. */
static int daemonize(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid > 0) {
        close(p[1]);
        char ok = 1;
        ssize_t n = read(p[0], &ok, 1);
        _exit(n == 1 && ok == 0 ? 0 : 1);
    }
    close(p[0]);
    setsid();
    if (fork() > 0)
        _exit(0);
    umask(022);
    if (chdir("/") < 0)
        return -errno;
    return p[1];
}

static void report_start(int fd, bool ok)
{
    if (fd < 0)
        return;
    char b = ok ? 0 : 1;
    ssize_t n = write(fd, &b, 1);
    (void)n;
    close(fd);
    if (ok) {
        bd_log_to_syslog();
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
            close(null);
        }
    }
}

typedef struct args {
    const char *config_path;
    const char *pidfile;
    bool foreground, check_only;
} args;

/* -1: go on; otherwise the exit status. */
static int parse_args(int argc, char **argv, args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"foreground", no_argument, NULL, 'f'},
        {"pidfile", required_argument, NULL, 'p'},
        {"check-config", no_argument, NULL, 'C'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "c:fp:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config_path = optarg;
            break;
        case 'f':
            a->foreground = true;
            break;
        case 'p':
            a->pidfile = optarg;
            break;
        case 'C':
            a->check_only = true;
            break;
        case 'V':
            printf("breachd %s (protocol %d)\n", BREACHD_VERSION, BR_PROTO_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "breachd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* The changelist folds the add/remove of a connection's write event within
 * one loop turn into one epoll_ctl (or none): two fewer system calls per
 * request/answer cycle. The test build's clock starts with the loop. */
static struct event_base *new_event_base(void)
{
    struct event_config *ecfg = event_config_new();
    if (!ecfg)
        return NULL;
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
    if (base && bd_testclock_start(base) < 0) {
        event_base_free(base);
        return NULL;
    }
    return base;
}

/* State and server from the loaded files (taken over), listening. 0, or a
 * negative errno after the reason was logged and everything was freed. */
static int start_server(struct event_base *base, const char *config_path, bd_state_files *files,
                        bd_server *srv)
{
    br_error err = {{0}};
    bd_state *state = NULL;
    bool srv_ok = false;
    int r = bd_state_new(base, files, NULL, &state, &err);
    if (r >= 0) {
        r = bd_server_init(srv, base, config_path, state, &err);
        srv_ok = true; /* srv owns state from here, even on failure */
        state = NULL;
    }
    if (r >= 0)
        r = bd_server_listen(srv, &err);
    if (r < 0) {
        bd_log(LOG_ERR, "%s", err.text[0] ? err.text : strerror(-r));
        if (srv_ok)
            bd_server_fini(srv);
        bd_state_unref(state);
        bd_state_shutdown_all();
    }
    return r;
}

/* What follows the configuration after a reload (bd_server's reloaded). */
typedef struct followers {
    bd_server *srv;
    bd_canary *canary;
    bd_follow *follow[BD_KINDS_]; /* NULL: no section follows the kind */
} followers;

static void reloaded(void *arg)
{
    followers *f = arg;
    bd_canary_reloaded(f->canary);
    for (int k = 0; k < BD_KINDS_; k++)
        bd_follow_apply(f->follow[k], f->srv->state->cfg);
}

/* [urls], [passwords], [ntlm] follow: on at the start or at a reload, off
 * at a reload; one follower per followed section. */
static void followers_start(followers *f)
{
    for (int k = 0; k < BD_KINDS_; k++) {
        bd_follow_config c;
        bd_follow_config_of(f->srv->state->cfg, (bd_kind)k, &c);
        if (!c.section) /* SIMILAR */
            continue;
        f->follow[k] = bd_follow_new(f->srv->base, (bd_kind)k);
        if (!f->follow[k])
            bd_log(LOG_WARNING, "no [%s] follow timer (out of memory): not following", c.section);
        bd_follow_apply(f->follow[k], f->srv->state->cfg);
    }
}

/* From listening to stopped: the pid file, the readiness report, the loop,
 * then every pending answer and the cache flush. The exit status. */
static int serve(bd_server *srv, int start_fd, const char *pidfile)
{
    br_error err = {{0}};
    if (pidfile && bd_pidfile_write(pidfile, &err) < 0) {
        bd_log(LOG_ERR, "%s", err.text);
        report_start(start_fd, false);
        bd_state_shutdown_all();
        bd_server_fini(srv);
        return 1;
    }
    report_start(start_fd, true);
    bd_state_log_filters(srv->state);
    bd_notify("READY=1\nSTATUS=serving\nMAINPID=%d", (int)getpid());
    bd_housekeeping *hk = bd_housekeeping_new(srv);
    if (!hk)
        bd_log(LOG_WARNING, "no housekeeping timer (out of memory): the cache is not purged");
    bd_canary *canary = bd_canary_new(srv);
    if (!canary)
        bd_log(LOG_WARNING, "no canary timer (out of memory): the canary does not run");
    followers f = {srv, canary, {NULL}};
    followers_start(&f);
    srv->reloaded = reloaded;
    srv->reloaded_ctx = &f;

    event_base_dispatch(srv->base);

    /* Answer what is still pending (drain timeout), flush the cache, go. */
    srv->reloaded = NULL;
    for (int k = 0; k < BD_KINDS_; k++)
        bd_follow_free(f.follow[k]);
    bd_canary_free(canary);
    bd_housekeeping_free(hk);
    bd_state_shutdown_all();
    bd_server_fini(srv);
    if (pidfile)
        bd_pidfile_remove(pidfile);
    return 0;
}

int main(int argc, char **argv)
{
    args a = {.config_path = BREACHD_CONFIG_PATH};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;

    bd_log_init(LOG_INFO);
    br_assert_set_hook(bd_log_assert);
    br_trace_set_hook(bd_log_trace);
    int hr = bd_hygiene_init();
    if (hr < 0) {
        bd_log(LOG_ERR, "cannot set up the process (PR_SET_DUMPABLE, SIGBUS handler): %s",
               strerror(-hr));
        return 1;
    }
    br_error err = {{0}};
    /* Absolute paths: the daemon changes to "/", and reloads re-read the config. */
    _cleanup_free_ char *config_path = NULL, *pidfile = NULL;
    if (bd_absolute_path(a.config_path, &config_path, &err) < 0 ||
        (a.pidfile && bd_absolute_path(a.pidfile, &pidfile, &err) < 0)) {
        bd_log(LOG_ERR, "%s", err.text);
        return 1;
    }
    a.config_path = config_path;
    bd_state_files files;
    int r = bd_state_files_load(a.config_path, &files, &err);
    if (r < 0) {
        bd_log(LOG_ERR, "%s", err.text[0] ? err.text : strerror(-r));
        return 1;
    }
    bd_log_set_level(files.cfg->daemon.log_level);
    if (!a.check_only && bd_log_to_file(files.cfg->daemon.log_file, &err) < 0) {
        bd_log(LOG_ERR, "%s", err.text);
        bd_state_files_clear(&files);
        return 1;
    }
    if (a.check_only) { /* the verdict, then what the daemon would run with */
        printf("%s: OK\n\n", a.config_path);
        breachd_config_dump(files.cfg, false, stdout);
        bd_state_files_clear(&files);
        return 0;
    }

    int start_fd = -1;
    if (!a.foreground && (start_fd = daemonize()) < 0) {
        bd_log(LOG_ERR, "cannot start in the background: %s", strerror(-start_fd));
        bd_state_files_clear(&files);
        return 1;
    }
    struct event_base *base = new_event_base();
    if (!base) {
        bd_log(LOG_ERR, "cannot create the event loop");
        bd_state_files_clear(&files);
        report_start(start_fd, false);
        return 1;
    }
    bd_server srv;
    if (start_server(base, a.config_path, &files, &srv) < 0) {
        report_start(start_fd, false);
        bd_testclock_stop();
        event_base_free(base);
        return 1;
    }
    int rc = serve(&srv, start_fd, pidfile);
    bd_testclock_stop();
    event_base_free(base);
    if (rc)
        return rc;
    bd_log(LOG_INFO, "stopped");
    return 0;
}

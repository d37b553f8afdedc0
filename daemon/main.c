/* SPDX-License-Identifier: MIT */
/* breachd [--config FILE] [--foreground] [--check-config] [--version] */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "housekeeping.h"
#include "log.h"
#include "notify.h"
#include "server.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: breachd [--config FILE] [--foreground] [--check-config] [--version]\n"
                 "\n"
                 "  -c, --config FILE   configuration file (default %s)\n"
                 "  -f, --foreground    stay in the foreground (systemd runs it so)\n"
                 "      --check-config  validate the configuration and the filters, then exit\n"
                 "      --version       print the version and exit\n",
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

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"foreground", no_argument, NULL, 'f'},
        {"check-config", no_argument, NULL, 'C'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *config_path = BREACHD_CONFIG_PATH;
    bool foreground = false, check_only = false;
    int c;
    while ((c = getopt_long(argc, argv, "c:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case 'f':
            foreground = true;
            break;
        case 'C':
            check_only = true;
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

    bd_log_init(LOG_INFO);
    int hr = bd_hygiene_init();
    if (hr < 0) {
        bd_log(LOG_ERR, "cannot set up the process (PR_SET_DUMPABLE, SIGBUS handler): %s", strerror(-hr));
        return 1;
    }
    br_error err = {{0}};
    bd_state_files files;
    int r = bd_state_files_load(config_path, &files, &err);
    if (r < 0) {
        bd_log(LOG_ERR, "%s", err.text[0] ? err.text : strerror(-r));
        return 1;
    }
    bd_log_set_level(files.cfg->daemon.log_level);
    if (check_only) {
        printf("%s: OK\n", config_path);
        bd_state_files_clear(&files);
        return 0;
    }

    int start_fd = -1;
    if (!foreground && (start_fd = daemonize()) < 0) {
        bd_log(LOG_ERR, "cannot start in the background: %s", strerror(-start_fd));
        bd_state_files_clear(&files);
        return 1;
    }

    /* The changelist folds the add/remove of a connection's write event
     * within one loop turn into one epoll_ctl (or none): two fewer system
     * calls per request/answer cycle. */
    struct event_config *ecfg = event_config_new();
    if (ecfg)
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = ecfg ? event_base_new_with_config(ecfg) : NULL;
    if (ecfg)
        event_config_free(ecfg);
    bd_state *state = NULL;
    bd_server srv;
    bool srv_ok = false;
    if (!base) {
        bd_log(LOG_ERR, "cannot create the event loop");
        bd_state_files_clear(&files);
        report_start(start_fd, false);
        return 1;
    }
    r = bd_state_new(base, &files, NULL, &state, &err);
    if (r >= 0) {
        r = bd_server_init(&srv, base, config_path, state, &err);
        srv_ok = true; /* srv owns state from here, even on failure */
        state = NULL;
    }
    if (r >= 0)
        r = bd_server_listen(&srv, &err);
    if (r < 0) {
        bd_log(LOG_ERR, "%s", err.text[0] ? err.text : strerror(-r));
        report_start(start_fd, false);
        if (srv_ok)
            bd_server_free(&srv);
        bd_state_unref(state);
        bd_state_shutdown_all();
        event_base_free(base);
        return 1;
    }
    report_start(start_fd, true);
    const br_filter_header *h = srv.state->pwfilter ? br_pwfilter_header(srv.state->pwfilter) : NULL;
    if (h)
        bd_log(LOG_INFO, "password filter: generation %llu, %llu keys",
               (unsigned long long)h->generation, (unsigned long long)h->key_count);
    else
        bd_log(LOG_INFO, "no password filter: every password check goes to the range API");
    bd_notify("READY=1\nSTATUS=serving\nMAINPID=%d", (int)getpid());
    bd_housekeeping *hk = bd_housekeeping_new(&srv);
    if (!hk)
        bd_log(LOG_WARNING, "no housekeeping timer (out of memory): the cache is not purged");

    event_base_dispatch(base);

    /* Answer what is still pending (drain timeout), flush the cache, go. */
    bd_housekeeping_free(hk);
    bd_state_shutdown_all();
    bd_server_free(&srv);
    event_base_free(base);
    bd_log(LOG_INFO, "stopped");
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* The library's SIGBUS handler, chained to the process's (dns_sigbus.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "core/map_guard.h"
#include "dns_sigbus.h"

/* The handler found when ours was installed: written only while ours is
 * not installed, so never while it runs. */
static struct sigaction previous;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    /* si_code > 0: raised by the kernel for this access */
    if (si->si_code > 0 && br_map_guard_fault(si->si_addr))
        return;
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(sig, si, uctx);
        return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    /* The default action: a fault runs its instruction again and is
     * raised again; a sent signal is raised again. */
    sigaction(sig, &previous, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

int bdns_sigbus_install(void)
{
    struct sigaction sa, now;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (sigaction(SIGBUS, NULL, &now) < 0)
        rc = -errno;
    else if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != on_sigbus) {
        previous = now;
        if (sigaction(SIGBUS, &sa, NULL) < 0)
            rc = -errno;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

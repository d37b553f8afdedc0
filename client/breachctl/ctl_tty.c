/* SPDX-License-Identifier: MIT */
/* The password prompt of breachctl password at a terminal (ctl_tty.h). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>

#include "ctl_tty.h"

/* The terminal whose echo is off, for the signal handler that turns it on
 * again before the signal's default action. */
static volatile sig_atomic_t tty_fd = -1;
static struct termios tty_saved;

static void tty_restore_and_die(int sig)
{
    if (tty_fd >= 0)
        tcsetattr(tty_fd, TCSAFLUSH, &tty_saved);
    raise(sig); /* SA_RESETHAND: the default action now */
}

/* The stream is unbuffered, so the password is only ever in buf. */
ssize_t ctl_tty_read_password(char *buf, size_t size)
{
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty)
        return -errno;
    setvbuf(tty, NULL, _IONBF, 0);
    struct termios noecho;
    int fd = fileno(tty);
    bool restore = tcgetattr(fd, &tty_saved) == 0;
    struct sigaction sa = {.sa_handler = tty_restore_and_die, .sa_flags = SA_RESETHAND}, old[4];
    static const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    if (restore) {
        noecho = tty_saved;
        noecho.c_lflag &= ~(tcflag_t)ECHO;
        noecho.c_lflag |= ECHONL;
        tty_fd = fd;
        for (int i = 0; i < 4; i++)
            sigaction(sigs[i], &sa, &old[i]);
        tcsetattr(fd, TCSAFLUSH, &noecho);
    }
    fputs("Password: ", tty);
    ssize_t len = -EIO;
    if (fgets(buf, (int)size, tty)) {
        len = (ssize_t)strcspn(buf, "\r\n");
        if (buf[len] == '\0' && (size_t)len == size - 1) {
            /* No end of line in the buffer: too long. Skip the rest. */
            int ch;
            while ((ch = fgetc(tty)) != EOF && ch != '\n')
                ;
            len = -EMSGSIZE;
        }
        buf[len < 0 ? 0 : len] = '\0';
    } else {
        fputc('\n', tty);
    }
    if (restore) {
        tcsetattr(fd, TCSAFLUSH, &tty_saved);
        tty_fd = -1;
        for (int i = 0; i < 4; i++)
            sigaction(sigs[i], &old[i], NULL);
    }
    fclose(tty);
    return len;
}

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

static const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* Echo off (a line break still shown), with the handlers that turn it on
 * again; false when the terminal's settings cannot be read. */
static bool echo_off(int fd, struct sigaction old[4])
{
    if (tcgetattr(fd, &tty_saved) != 0)
        return false;
    struct sigaction sa = {.sa_handler = tty_restore_and_die, .sa_flags = SA_RESETHAND};
    struct termios noecho = tty_saved;
    noecho.c_lflag &= ~(tcflag_t)ECHO;
    noecho.c_lflag |= ECHONL;
    tty_fd = fd;
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], &sa, &old[i]);
    tcsetattr(fd, TCSAFLUSH, &noecho);
    return true;
}

static void echo_on(int fd, const struct sigaction old[4])
{
    tcsetattr(fd, TCSAFLUSH, &tty_saved);
    tty_fd = -1;
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], &old[i], NULL);
}

/* One line into buf: its length, -EMSGSIZE (too long: the rest is read
 * and dropped), -ENODATA at the end of input (Ctrl-D on an empty line),
 * -EIO on a read error. The stream is unbuffered, so the password is only
 * ever in buf. */
static ssize_t read_line(FILE *tty, char *buf, size_t size)
{
    if (!fgets(buf, (int)size, tty)) {
        buf[0] = '\0';
        fputc('\n', tty); /* the prompt's line ends */
        return feof(tty) ? -ENODATA : -EIO;
    }
    ssize_t len = (ssize_t)strcspn(buf, "\r\n");
    if (buf[len] == '\0' && (size_t)len == size - 1) {
        /* No end of line in the buffer: too long. Skip the rest. */
        int ch;
        while ((ch = fgetc(tty)) != EOF && ch != '\n')
            ;
        len = -EMSGSIZE;
    }
    buf[len < 0 ? 0 : len] = '\0';
    return len;
}

ssize_t ctl_tty_read_password(char *buf, size_t size)
{
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty)
        return -errno;
    setvbuf(tty, NULL, _IONBF, 0);
    int fd = fileno(tty);
    struct sigaction old[4];
    bool restore = echo_off(fd, old);
    fputs("Password: ", tty);
    ssize_t len = read_line(tty, buf, size);
    if (len == 0) {
        /* Echo stays off: what is typed ahead is not flushed. */
        fputs("An empty password is not checked: type it again, or Ctrl-D to stop.\n"
              "Password: ",
              tty);
        len = read_line(tty, buf, size);
        if (len == 0)
            len = -ENOMSG;
    }
    if (restore)
        echo_on(fd, old);
    fclose(tty);
    return len;
}

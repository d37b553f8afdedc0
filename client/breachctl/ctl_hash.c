/* SPDX-License-Identifier: MIT */
/* breachctl password --print-hash (ctl_hash.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breachctl.h"
#include "proto/client.h"
#include "ctl_hash.h"
#include "ctl_io.h"
#include "ctl_tty.h"
#include "core/hash.h"
#include "core/nthash.h"
#include "core/util.h"

/* stdin's buffer holds the passwords read: ours, so that it can be wiped. */
static char hash_stdin_buf[65536];

/* One password's hash as a line on stdout; 0 or a negative errno. */
static int print_one(bool ntlm, const char *pw, size_t len)
{
    uint8_t h[BR_SHA1_LEN];
    char hex[2 * BR_SHA1_LEN + 1];
    size_t hl = ntlm ? BR_NT_LEN : BR_SHA1_LEN;
    int r = ntlm ? br_client_hash_password_nt(pw, len, h) : br_client_hash_password(pw, len, h);
    if (r < 0)
        return r;
    br_hex_encode_upper(h, hl, hex);
    hex[2 * hl] = '\0';
    r = printf("%s\n", hex) < 0 ? -EIO : 0;
    br_wipe(h, sizeof(h));
    br_wipe(hex, sizeof(hex));
    return r;
}

static int from_tty(bool ntlm)
{
    char pw[1024];
    ssize_t len = ctl_tty_read_password(pw, sizeof(pw));
    int r = len > 0 ? print_one(ntlm, pw, (size_t)len) : (int)len;
    br_wipe(pw, sizeof(pw));
    if (len == -ENODATA || len == -ENOMSG)
        ctl_err("password: no password given%s",
                len == -ENOMSG ? " (an empty one is not hashed)" : "");
    else if (len == -EMSGSIZE)
        ctl_err("password: longer than %zu bytes", sizeof(pw) - 2);
    else if (len < 0)
        ctl_err("password: cannot read from the terminal: %s", strerror((int)-len));
    else if (r < 0)
        ctl_err("password: --print-hash: %s", strerror(-r));
    return r < 0 ? EXIT_ERROR : EXIT_CLEAN;
}

static int from_stdin(bool ntlm)
{
    setvbuf(stdin, hash_stdin_buf, _IOFBF, sizeof(hash_stdin_buf));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len = 0;
    int r = 0;
    while (r == 0 && (len = ctl_read_line_wiped(stdin, &line, &cap)) >= 0) {
        r = print_one(ntlm, line, (size_t)len);
        br_wipe(line, cap);
    }
    if (r == 0 && len == -2)
        r = -ENOMEM;
    if (r == 0 && ferror(stdin))
        r = -EIO;
    if (line)
        br_wipe(line, cap);
    free(line);
    br_wipe(hash_stdin_buf, sizeof(hash_stdin_buf));
    if (r == 0 && fflush(stdout) != 0)
        r = -EIO;
    if (r < 0) {
        ctl_err("password: --print-hash: %s", strerror(-r));
        return EXIT_ERROR;
    }
    return EXIT_CLEAN;
}

int ctl_print_password_hashes(bool ntlm)
{
    return isatty(STDIN_FILENO) ? from_tty(ntlm) : from_stdin(ntlm);
}

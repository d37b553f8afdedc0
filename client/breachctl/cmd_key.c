/* SPDX-License-Identifier: MIT */
/* breachctl key generate: an Ed25519 key pair for signing filters
 * (lib/filter/filter_sign.h, docs/filter-format.md "Signatures"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "filter/filter_sign.h"
#include "core/hash.h"
#include "core/util.h"

static const ctl_usage key_usage[] = {
    {"key generate", "--secret FILE --public FILE",
     "Makes an Ed25519 key pair for filter sign: the secret key (PEM, mode 0600) and the "
     "public key (PEM) that hosts name in pubkey. Existing files are never overwritten."},
};

void cmd_key_summary(FILE *out)
{
    ctl_usage_summary(out, key_usage, BR_ARRAY_SIZE(key_usage));
}

static void generate_usage(FILE *out)
{
    ctl_usage_command(out, key_usage, BR_ARRAY_SIZE(key_usage), "key generate");
}

static void family_usage(FILE *out)
{
    fputs("Usage: breachctl key SUBCOMMAND [OPTIONS]\n\n", out);
    cmd_key_summary(out);
}

static int key_generate(int argc, char **argv)
{
    const char *secret = NULL, *public = NULL;
    const ctl_opt opts[] = {
        CTL_STR("secret", &secret),
        CTL_STR("public", &public),
        CTL_IGNORE("socket"),
        CTL_HELP,
    };
    int first;
    int r =
        ctl_getopt("key generate", opts, BR_ARRAY_SIZE(opts), generate_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first < argc) {
        ctl_err("key generate: unexpected argument '%s'", argv[first]);
        return EXIT_ERROR;
    }
    if (!secret || !public) {
        ctl_err("key generate: --secret and --public are required");
        generate_usage(stderr);
        return EXIT_ERROR;
    }
    if (strcmp(secret, public) == 0) {
        ctl_err("key generate: --secret and --public name the same file");
        return EXIT_ERROR;
    }
    br_error err = {{0}};
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    uint8_t id[BR_KEY_ID_LEN];
    r = br_sign_key_generate(&key, &err);
    if (r == 0)
        r = br_sign_key_save(key, secret, public, &err);
    if (r == 0 && br_sign_key_id(key, id) < 0)
        r = br_error_set(&err, -EIO, "reading the new key failed");
    if (r < 0) {
        ctl_err("key generate: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    char hex[2 * BR_KEY_ID_LEN + 1];
    br_hex_encode_upper(id, BR_KEY_ID_LEN, hex);
    printf("secret key: %s (keep it off the fleet)\npublic key: %s\nkey id:     %s\n", secret,
           public, hex);
    return 0;
}

int cmd_key(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    const ctl_opt opts[] = {
        CTL_IGNORE("socket"),
        CTL_HELP,
    };
    int first;
    /* Stop at the subcommand: its own options are parsed by it. */
    int r = ctl_getopt_prefix("key", opts, BR_ARRAY_SIZE(opts), family_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first >= argc || strcmp(argv[first], "generate") != 0) {
        ctl_err("key: expected generate (see breachctl key --help)");
        return EXIT_ERROR;
    }
    return key_generate(argc - first, argv + first);
}

/* SPDX-License-Identifier: MIT */
/* breachctl filter sign, and the signature half of filter verify --pubkey
 * (lib/filter/filter_sign.h; docs/filter-format.md "Signatures"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "filter/filter_sign.h"
#include "core/hash.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "core/util.h"

int fleet_open_verified(const char *path, br_filter_header *h, br_error *err)
{
    br_filter_file *f = NULL;
    int r = br_filter_file_open(path, &f, err);
    if (r < 0)
        return r;
    *h = *br_filter_file_header(f);
    /* The algorithm's own checks too: only a filter that loads is signed. */
    if (h->kind == BR_KIND_URL_SHA256 && !url_offline_file(path)) {
        br_urlfilter *uf = NULL;
        r = br_urlfilter_from_file(f, &uf, err);
        br_urlfilter_free(uf);
    } else {
        br_pwfilter *pf = NULL;
        r = br_pwfilter_from_file(f, &pf, err);
        br_pwfilter_free(pf);
    }
    return r < 0 ? br_error_prefix(err, r, "%s", path) : 0;
}

void fleet_key_id_hex(const br_sign_key *key, char hex[2 * BR_KEY_ID_LEN + 1])
{
    uint8_t id[BR_KEY_ID_LEN];
    if (br_sign_key_id(key, id) < 0)
        memset(id, 0, sizeof(id));
    br_hex_encode_upper(id, BR_KEY_ID_LEN, hex);
}

/* The signature path.sig holds now, when it is of another file: that file
 * had a generation, and the new one must be above it (docs/fleet.md,
 * "Generations"). */
static int sign_order(const char *path, const br_filter_header *h, br_error *err)
{
    _cleanup_free_ char *sp = br_filter_sig_path(path);
    if (!sp)
        return -ENOMEM;
    uint8_t raw[BR_SIG_SIZE + 1];
    FILE *f = fopen(sp, "re");
    if (!f)
        return 0;
    size_t len = fread(raw, 1, sizeof(raw), f);
    fclose(f);
    br_filter_sig old;
    if (br_filter_sig_decode(raw, len, &old, NULL) < 0 ||
        memcmp(old.header_sha256, h->header_sha256, 32) == 0 || old.generation < h->generation)
        return 0;
    return br_error_set(err, -EINVAL,
                        "%s is generation %" PRIu64 ", but %s signed generation %" PRIu64
                        " of another file: every filter a publisher signs needs a new, higher "
                        "generation (rebuild with --generation above %" PRIu64 ")",
                        path, h->generation, sp, old.generation, old.generation);
}

static void sign_usage(FILE *out)
{
    filter_usage_of(out, "filter sign");
}

int filter_sign_cmd(int argc, char **argv)
{
    const char *keyfile = NULL;
    const ctl_opt opts[] = {
        CTL_STR("key", &keyfile),
        CTL_IGNORE("socket"),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("filter sign", opts, BR_ARRAY_SIZE(opts), sign_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (!keyfile || first + 1 != argc) {
        ctl_err("filter sign: expected --key SECRET and one FILE");
        sign_usage(stderr);
        return EXIT_ERROR;
    }
    const char *path = argv[first];
    br_error err = {{0}};
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    br_filter_header h;
    uint8_t sig[BR_SIG_SIZE];
    r = br_sign_key_load_secret(keyfile, &key, &err);
    if (r == 0)
        r = fleet_open_verified(path, &h, &err);
    if (r == 0)
        r = sign_order(path, &h, &err);
    if (r == 0)
        r = br_filter_sign(key, &h, sig, &err);
    if (r == 0)
        r = br_filter_sig_write(path, sig, &err);
    if (r < 0) {
        ctl_err("filter sign: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    char hex[2 * BR_KEY_ID_LEN + 1];
    fleet_key_id_hex(key, hex);
    printf("signed %s: %s.sig (%s, generation %" PRIu64 ", key id %s)\n", path, path,
           br_filter_kind_name(h.kind), h.generation, hex);
    return 0;
}

int filter_verify_signature(const char *path, const char *pubkey)
{
    br_error err = {{0}};
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    br_filter_header h;
    int r = br_sign_key_load_public(pubkey, &key, &err);
    if (r == 0)
        r = fleet_open_verified(path, &h, &err);
    if (r == 0)
        r = br_filter_sig_verify(key, path, &h, &err);
    if (r < 0) {
        ctl_err("filter verify: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    char hex[2 * BR_KEY_ID_LEN + 1];
    fleet_key_id_hex(key, hex);
    printf("%s: signature OK (Ed25519, key id %s)\n", path, hex);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuzz target for breachd's configuration reader (daemon/conf*.c):
 * breachd_config_load_stream over the input as a file (fmemopen).
 *
 * Checked: no crash, leak or sanitizer report; a refusal is -EINVAL (or
 * -ENOMEM) with a message naming the file, and leaves no configuration; an
 * accepted configuration dumped (breachd_config_dump) loads again, and that
 * one dumps to the same text (conf.h: "Loading the output gives the same
 * configuration"); the line breachd_config_key_line gives for each key the
 * input set lies within the input. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_schema.h"

#define FUZZ_NAME "fuzz_config"
#include "fuzz_check.h"

#define NAME "fuzz.conf"

static char *dump(const breachd_config *cfg, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    CHECK(f);
    breachd_config_dump(cfg, true, f);
    CHECK(fclose(f) == 0);
    return text;
}

static int load(const void *data, size_t size, breachd_config **cfg, br_error *err)
{
    /* fmemopen wants at least one byte: an empty file is /dev/null. */
    FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
    CHECK(f);
    int r = breachd_config_load_stream(f, NAME, cfg, err);
    fclose(f);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    breachd_config *cfg = NULL;
    br_error err = {{0}};
    int r = load(data, size, &cfg, &err);
    if (r < 0) {
        CHECK(cfg == NULL);
        CHECK(r == -EINVAL || r == -ENOMEM);
        CHECK(strncmp(err.text, NAME ":", strlen(NAME ":")) == 0);
        return 0;
    }
    CHECK(cfg != NULL);
    unsigned lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        CHECK(breachd_config_key_line(cfg, bd_conf_keys[i].section, bd_conf_keys[i].name) <= lines);

    size_t len1, len2;
    char *text1 = dump(cfg, &len1);
    breachd_config *again = NULL;
    r = load(text1, len1, &again, &err);
    if (r != 0)
        fprintf(stderr, "%s\n---\n%s\n", err.text, text1);
    CHECK(r == 0);
    char *text2 = dump(again, &len2);
    CHECK(len1 == len2 && memcmp(text1, text2, len1) == 0);
    free(text1);
    free(text2);
    breachd_config_free(again);
    breachd_config_free(cfg);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif

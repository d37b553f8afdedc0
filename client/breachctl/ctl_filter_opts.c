/* SPDX-License-Identifier: MIT */
/* The filter commands' shared options and output (breachctl.h): --generation
 * and the generation of a new filter (docs/fleet.md, "Generations"),
 * --source, and the info commands' hashes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "breachctl.h"
#include "core/hash.h"
#include "core/util.h"
#include "filter/filter_file.h"

bool ctl_opt_generation(const char *cmd, const char *arg, void *dst)
{
    if (ctl_parse_u64(arg, UINT64_MAX, dst))
        return true;
    ctl_err("%s: --generation '%s': not a whole number", cmd, arg);
    return false;
}

uint64_t ctl_generation_after(uint64_t above)
{
    uint64_t now = (uint64_t)BR_MAX(br_build_time_now(), (int64_t)1);
    return above >= now ? (above == UINT64_MAX ? above : above + 1) : now;
}

int ctl_generation_for(const char *cmd, const char *output, uint64_t dflt, uint64_t *gen)
{
    br_filter_header old;
    bool have = br_filter_header_read(output, &old) == 0;
    if (*gen) {
        if (have && *gen <= old.generation) {
            ctl_err("%s: --generation %" PRIu64 " is not above generation %" PRIu64 " of %s, "
                    "which the new file replaces: every filter a publisher signs needs a new, "
                    "higher generation (docs/fleet.md, \"Generations\")",
                    cmd, *gen, old.generation, output);
            return -1;
        }
        return 0;
    }
    if (have && old.generation >= dflt) {
        if (old.generation == UINT64_MAX) {
            ctl_err("%s: generation overflow", cmd);
            return -1;
        }
        dflt = old.generation + 1;
    }
    *gen = dflt;
    return 0;
}

bool ctl_opt_source(const char *cmd, const char *arg, void *dst)
{
    if (strlen(arg) >= BR_FILTER_SOURCE_SIZE) {
        ctl_err("%s: --source is longer than %d bytes", cmd, BR_FILTER_SOURCE_SIZE - 1);
        return false;
    }
    *(const char **)dst = arg;
    return true;
}

void ctl_print_hex(const char *label, const uint8_t *d, size_t len)
{
    char hex[2 * 64 + 1];
    if (len > 64)
        len = 64;
    br_hex_encode_upper(d, len, hex);
    printf("%-18s %s\n", label, hex);
}

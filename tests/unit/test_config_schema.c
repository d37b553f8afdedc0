/* SPDX-License-Identifier: MIT */
/* The table of breachd.conf keys (daemon/conf_schema.c) against its two
 * documents: breachd.conf(5) (docs/breachd.conf.5) and
 * data/breachd.conf.example must list the same keys, in the same sections,
 * with the same defaults, and the man page the same bounds. Also: every
 * default parses, and the socket default is the build's default_socket. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf_schema.h"
#include "config.h"
#include "config_helpers.h"
#include "testutil.h"

#define DOC_SOCKET "/run/breachd/breachd.sock"

typedef struct doc_key {
    char section[32];
    char name[64];
    char def[256];
    char bounds[64];
} doc_key;

static char *read_text(const char *rel)
{
    char *path = tu_path("%s/%s", FIXTURES_DIR, rel);
    size_t len;
    uint8_t *data = tu_read_file(path, &len);
    if (!data)
        fail_msg("cannot read %s", path);
    char *text = tu_xmalloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    free(path);
    return text;
}

/* A roff line without quotes and font escapes, "\-" as "-", blanks folded,
 * no blank before a comma. */
static void roff_plain(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = in; *p && n + 1 < cap; p++) {
        if (*p == '"')
            continue;
        if (p[0] == '\\' && p[1] == 'f' && p[2]) {
            p += 2;
            continue;
        }
        if (p[0] == '\\' && p[1] == '-') {
            out[n++] = '-';
            p++;
            continue;
        }
        char ch = *p == '\t' ? ' ' : *p;
        if (ch == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        if (ch == ',' && n > 0 && out[n - 1] == ' ')
            n--;
        if (ch == ')' && n > 0 && out[n - 1] == ' ')
            n--;
        out[n++] = ch;
    }
    out[n] = '\0';
}

/* `.BR key " = " ... (default D[, LO .. HI])` lines under `.SH "[s] SECTION"`. */
static size_t man_keys(doc_key *out, size_t cap)
{
    char *text = read_text("../../docs/breachd.conf.5");
    char section[32] = "";
    size_t n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, ".SH", 3) == 0) {
            section[0] = '\0';
            sscanf(line, ".SH \"[%31[a-z]] SECTION\"", section);
            continue;
        }
        if (!section[0] || strncmp(line, ".BR ", 4) != 0 || !strstr(line, "\" = \""))
            continue;
        char plain[512];
        roff_plain(line + 4, plain, sizeof(plain));
        const char *d = strstr(plain, "(default ");
        if (!d)
            fail_msg("breachd.conf(5): [%s] %s has no (default ...)", section, plain);
        assert_true(n < cap);
        doc_key *k = &out[n++];
        memset(k, 0, sizeof(*k));
        snprintf(k->section, sizeof(k->section), "%s", section);
        sscanf(plain, "%63s", k->name);
        d += strlen("(default ");
        const char *close = strchr(d, ')');
        assert_non_null(close);
        /* Bounds follow the last ", " when they hold " .. "; a default may
         * hold ", " itself (a list). */
        const char *comma = NULL, *dots = strstr(d, " .. ");
        for (const char *c = strstr(d, ", "); c && c < close; c = strstr(c + 1, ", "))
            if (dots && dots < close && c < dots)
                comma = c;
        const char *end = comma ? comma : close;
        snprintf(k->def, sizeof(k->def), "%.*s", (int)(end - d), d);
        if (strncmp(k->def, "empty", 5) == 0)
            k->def[0] = '\0';
        /* The build fills the page's socket path in from -Ddefault_socket
         * (docs/meson.build), as it does the daemon's default. */
        if (strcmp(k->def, "@DEFAULT_SOCKET@") == 0)
            snprintf(k->def, sizeof(k->def), "%s", BREACHD_DEFAULT_SOCKET);
        if (end == comma)
            snprintf(k->bounds, sizeof(k->bounds), "%.*s", (int)(close - comma - 2), comma + 2);
    }
    free(text);
    return n;
}

/* `key = value` lines of the example, in order, with their sections. */
static size_t example_keys(doc_key *out, size_t cap)
{
    char *text = read_text("../breachd.conf.example");
    char section[32] = "";
    size_t n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == ';')
            continue;
        if (sscanf(line, "[%31[a-z]]", section) == 1)
            continue;
        assert_true(n < cap);
        doc_key *k = &out[n++];
        memset(k, 0, sizeof(*k));
        snprintf(k->section, sizeof(k->section), "%s", section);
        const char *eq = strchr(line, '=');
        assert_non_null(eq);
        sscanf(line, "%63[a-z0-9_]", k->name);
        for (eq++; *eq == ' '; eq++) {
        }
        snprintf(k->def, sizeof(k->def), "%s", eq);
    }
    free(text);
    return n;
}

static const char *table_default(const bd_conf_key *k)
{
    /* The documents show the default build's socket. */
    if (strcmp(k->section, "daemon") == 0 && strcmp(k->name, "socket") == 0)
        return DOC_SOCKET;
    return k->def;
}

static void test_man_page(void **state)
{
    (void)state;
    doc_key man[128];
    size_t n = man_keys(man, BR_ARRAY_SIZE(man));
    for (size_t i = 0; i < n && i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        char bounds[64];
        bd_conf_format_bounds(k, bounds, sizeof(bounds));
        if (strcmp(man[i].section, k->section) || strcmp(man[i].name, k->name))
            fail_msg("breachd.conf(5) key %zu is [%s] %s, the table's is [%s] %s", i,
                     man[i].section, man[i].name, k->section, k->name);
        if (strcmp(man[i].def, table_default(k)))
            fail_msg("[%s] %s: breachd.conf(5) says default \"%s\", the table \"%s\"", k->section,
                     k->name, man[i].def, table_default(k));
        if (strcmp(man[i].bounds, bounds))
            fail_msg("[%s] %s: breachd.conf(5) says bounds \"%s\", the table \"%s\"", k->section,
                     k->name, man[i].bounds, bounds);
    }
    if (n != bd_conf_n_keys)
        fail_msg("breachd.conf(5) documents %zu keys, the table has %zu", n, bd_conf_n_keys);
}

static void test_example(void **state)
{
    (void)state;
    doc_key ex[128];
    size_t n = example_keys(ex, BR_ARRAY_SIZE(ex));
    for (size_t i = 0; i < n && i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        if (strcmp(ex[i].section, k->section) || strcmp(ex[i].name, k->name))
            fail_msg("breachd.conf.example key %zu is [%s] %s, the table's is [%s] %s", i,
                     ex[i].section, ex[i].name, k->section, k->name);
        if (strcmp(ex[i].def, table_default(k)))
            fail_msg("[%s] %s: breachd.conf.example says \"%s\", the table's default is \"%s\"",
                     k->section, k->name, ex[i].def, table_default(k));
    }
    if (n != bd_conf_n_keys)
        fail_msg("breachd.conf.example sets %zu keys, the table has %zu", n, bd_conf_n_keys);
}

/* Every default parses; every row has a doc line and a key name that the
 * reader accepts; a key appears once. */
static void test_table(void **state)
{
    (void)state;
    breachd_config *c = NULL;
    assert_int_equal(breachd_config_defaults(&c), 0);
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        br_error err = {{0}};
        if (bd_conf_apply(c, k, k->def, &err) != 0)
            fail_msg("[%s] %s: default \"%s\": %s", k->section, k->name, k->def, err.text);
        assert_true(k->doc && *k->doc);
        for (size_t j = 0; j < i; j++)
            assert_false(strcmp(bd_conf_keys[j].section, k->section) == 0 &&
                         strcmp(bd_conf_keys[j].name, k->name) == 0);
    }
    breachd_config_free(c);
}

/* The daemon's socket is the one the clients default to (meson option
 * default_socket, BREACHD_DEFAULT_SOCKET in config.h). */
static void test_default_socket(void **state)
{
    (void)state;
    breachd_config *c = NULL;
    assert_int_equal(breachd_config_defaults(&c), 0);
    assert_string_equal(c->daemon.socket, BREACHD_DEFAULT_SOCKET);
    breachd_config_free(c);
    c = load_ok("[daemon]\nlog_level = debug\n");
    assert_string_equal(c->daemon.socket, BREACHD_DEFAULT_SOCKET);
    breachd_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_man_page),
        cmocka_unit_test(test_example),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_default_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

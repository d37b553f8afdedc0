/* SPDX-License-Identifier: MIT */
/* ppolicy_breachd.so: a password check module of slapd's ppolicy overlay
 * (docs/directories.md, "OpenLDAP"), installed as
 * /usr/lib/ldap/breachd_ppolicy.so. slapd 2.5 loads the module named by
 * the policy entry's pwdCheckModule (with pwdCheckQuality: 2), 2.6 the
 * one named by olcPPolicyCheckModule for policies with pwdUseCheckModule:
 * TRUE. Both call check_password() with the new password in clear, the
 * entry, and the policy's pwdCheckModuleArg (here key=value words), and
 * return the module's message to the client as the result's text; they
 * differ in how the message comes back:
 *
 *   2.5: int check_password(char *pw, char **msg, Entry *e, struct berval *arg)
 *        *msg is NULL on entry; the module allocates the text (malloc),
 *        slapd frees it;
 *   2.6: int check_password(char *pw, struct berval *msg, Entry *e, struct berval *arg)
 *        msg is a buffer slapd allocated, bv_len its size.
 *
 * The first word at msg tells them apart: a NULL pointer (2.5) or a
 * buffer size (2.6, never 0). slapd serializes the calls. A refusal or
 * failure returns non-zero; an error or unknown answer is also one line in
 * slapd's log. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "dirmod.h"

/* The structures of the interface, as liblber and slapd (OpenLDAP's
 * servers/slapd/slap.h, 2.5 and 2.6) define them, as far as this module
 * reads them: a counted string, and the entry whose password changes,
 * with its attributes (the user's own names for banned=). Declared here
 * so the build needs no OpenLDAP headers (Debian ships none for slapd's
 * internals). */
struct berval {
    unsigned long bv_len; /* ber_len_t */
    char *bv_val;
};
typedef struct AttributeDescription {
    struct AttributeDescription *ad_next;
    void *ad_type;
    struct berval ad_cname; /* the attribute's name, as the schema spells it */
} AttributeDescription;
typedef struct Attribute {
    AttributeDescription *a_desc;
    struct berval *a_vals;  /* BerVarray: ends with a NULL bv_val */
    struct berval *a_nvals; /* normalized values */
    unsigned a_numvals;
    unsigned a_flags;
    struct Attribute *a_next;
} Attribute;
typedef struct Entry {
    unsigned long e_id; /* ID */
    struct berval e_name;
    struct berval e_nname;
    Attribute *e_attrs;
} Entry;

#define BD_LDAP_SUCCESS 0
#define BD_LDAP_CONSTRAINT_VIOLATION 19

int check_password(char *passwd, void *errmsg, Entry *entry, struct berval *arg);

/* One line in slapd's log the way slapd's own Debug(LDAP_DEBUG_ANY, ...)
 * writes it: to its debug output (slapd -d) when its debug level is set,
 * to syslog when its syslog level is; symbols slapd exports to its
 * modules, looked up at run time. Without them (not inside slapd):
 * syslog. */
static void log_line(const char *what, const char *text)
{
    typedef void (*debug_fn)(int, int, const char *, ...);
    const int *debug = dlsym(RTLD_DEFAULT, "slap_debug");
    const int *sys = dlsym(RTLD_DEFAULT, "ldap_syslog");
    debug_fn lutil_debug = (debug_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "lutil_debug");
    char line[DM_LOG_MAX + 64];
    snprintf(line, sizeof(line), "ppolicy breachd: %s%s", what, text);
    if (debug && *debug && lutil_debug)
        lutil_debug(*debug, -1, "%s\n", line);
    if (!debug || !sys || *sys)
        syslog(LOG_WARNING, "%s", line);
}

/* The message for the client, both ways (above). Reading the first word
 * is safe in both: a char * or a struct berval's first field. */
static void set_message(void *errmsg, const char *text)
{
    uintptr_t first;
    if (!errmsg)
        return;
    memcpy(&first, errmsg, sizeof(first));
    if (first == 0) {
        char *copy = strdup(text); /* 2.5: slapd frees it */
        if (copy)
            memcpy(errmsg, &copy, sizeof(copy));
        return;
    }
    struct berval *bv = errmsg; /* 2.6: bv_len bytes writable */
    if (!bv->bv_val)
        return;
    snprintf(bv->bv_val, bv->bv_len, "%s", text);
    bv->bv_len = strlen(bv->bv_val);
}

/* The entry's names for banned= (docs/banned.md): cn, sn, givenName, uid
 * and the local part of mail, each value. */
static void entry_names(const Entry *e, dm_names *names)
{
    static const char *const wanted[] = {"cn", "sn", "givenName", "uid", "mail"};
    for (const Attribute *a = e ? e->e_attrs : NULL; a; a = a->a_next) {
        const struct berval *n = a->a_desc ? &a->a_desc->ad_cname : NULL;
        size_t w = 0;
        while (n && w < sizeof(wanted) / sizeof(wanted[0]) &&
               (n->bv_len != strlen(wanted[w]) || strncasecmp(n->bv_val, wanted[w], n->bv_len)))
            w++;
        if (!n || w == sizeof(wanted) / sizeof(wanted[0]))
            continue;
        for (const struct berval *v = a->a_vals; v && v->bv_val; v++) {
            const char *at = w == 4 ? memchr(v->bv_val, '@', v->bv_len) : NULL;
            dm_names_add(names, v->bv_val, at ? (size_t)(at - v->bv_val) : v->bv_len);
        }
    }
}

int check_password(char *passwd, void *errmsg, Entry *entry, struct berval *arg)
{
    dm_options o;
    dm_names names = {0};
    dm_result r;
    char err[DM_MESSAGE_MAX - 40];
    dm_options_init(&o);
    if (arg && arg->bv_val &&
        dm_options_parse_words(&o, arg->bv_val, arg->bv_len, err, sizeof(err)) < 0) {
        log_line("pwdCheckModuleArg: ", err);
        set_message(errmsg, "Password rejected: the breachd check is misconfigured");
        return BD_LDAP_CONSTRAINT_VIOLATION;
    }
    if (!passwd) {
        set_message(errmsg, "Password rejected: no password to check");
        return BD_LDAP_CONSTRAINT_VIOLATION;
    }
    entry_names(entry, &names);
    dm_check_user(&o, passwd, strlen(passwd), &names, &r);
    if (r.log[0])
        log_line("", r.log);
    if (r.accept)
        return BD_LDAP_SUCCESS;
    set_message(errmsg, r.message);
    return BD_LDAP_CONSTRAINT_VIOLATION;
}

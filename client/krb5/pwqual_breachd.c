/* SPDX-License-Identifier: MIT */
/* pwqual_breachd.so: MIT Kerberos' password quality module "breachd"
 * (docs/directories.md, "MIT Kerberos"). kadmind and kadmin.local load it
 * through kdc.conf's
 *
 *   [plugins]
 *       pwqual = { module = breachd:/usr/lib/x86_64-linux-gnu/krb5/plugins/pwqual/breachd.so }
 *
 * and read its options from the profile's [appdefaults] breachd = { ... }
 * (per realm too, krb5_appdefault_string's rules) when the module is
 * opened. A breached password is refused with KADM5_PASS_Q_DICT (a
 * dictionary of known passwords, which is what the corpus is), a password
 * that could not be checked with KADM5_PASS_Q_GENERIC, each with the
 * module's message as the extended message: kadmin.local shows it;
 * kadmind's kpasswd service and kadmin RPC (MIT 1.20) send only the
 * code's own text (docs/directories.md). An error or unknown answer is
 * also one line in kadmind's log. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <krb5/pwqual_plugin.h>

#include "dirmod.h"

krb5_error_code pwqual_breachd_initvt(krb5_context context, int maj_ver, int min_ver,
                                      krb5_plugin_vtable vtable);

struct krb5_pwqual_moddata_st {
    dm_options opts;
    char bad[DM_MESSAGE_MAX]; /* a bad option: every check refused, saying this */
};

/* One line for the server's log: kadmind's own logger (its [logging]
 * admin_server), looked up at run time since libkadm5srv does not declare
 * it; syslog when the host has none. */
static void log_line(const char *line)
{
    typedef krb5_error_code (*klog_fn)(int, const char *, ...);
    klog_fn klog = (klog_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "krb5_klog_syslog");
    if (klog)
        klog(LOG_WARNING, "pwqual breachd: %s", line);
    else
        syslog(LOG_AUTHPRIV | LOG_WARNING, "pwqual breachd: %s", line);
}

static void read_options(krb5_context ctx, krb5_pwqual_moddata d)
{
    static const char *const names[] = {"socket",  "min_count", "on_error",          "on_unknown",
                                        "timeout", "similar",   "similar_min_count", "banned"};
    char *realm = NULL;
    krb5_data rd = {0};
    if (krb5_get_default_realm(ctx, &realm) == 0) {
        rd.data = realm;
        rd.length = (unsigned)strlen(realm);
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !d->bad[0]; i++) {
        char *v = NULL, err[DM_MESSAGE_MAX - 40];
        krb5_appdefault_string(ctx, "breachd", realm ? &rd : NULL, names[i], "", &v);
        if (v && v[0] &&
            dm_option_set(&d->opts, names[i], strlen(names[i]), v, strlen(v), err, sizeof(err)) < 0)
            snprintf(d->bad, sizeof(d->bad), "[appdefaults] breachd: %s", err);
        free(v);
    }
    krb5_free_default_realm(ctx, realm);
}

static krb5_error_code breachd_open(krb5_context ctx, const char *dict_file,
                                    krb5_pwqual_moddata *out)
{
    (void)dict_file;
    krb5_pwqual_moddata d = calloc(1, sizeof(*d));
    if (!d)
        return ENOMEM;
    dm_options_init(&d->opts);
    read_options(ctx, d);
    if (d->bad[0])
        log_line(d->bad);
    *out = d;
    return 0;
}

static krb5_error_code breachd_check(krb5_context ctx, krb5_pwqual_moddata d, const char *password,
                                     const char *policy_name, krb5_principal princ,
                                     const char **languages)
{
    (void)policy_name, (void)languages;
    dm_result r;
    dm_names names = {0}; /* the principal's components, for banned= */
    for (krb5_int32 i = 0; princ && i < princ->length; i++)
        dm_names_add(&names, princ->data[i].data, princ->data[i].length);
    if (d->bad[0]) {
        log_line(d->bad);
        krb5_set_error_message(ctx, KADM5_PASS_Q_GENERIC,
                               "Password rejected: the breachd check is misconfigured");
        return KADM5_PASS_Q_GENERIC;
    }
    dm_check_user(&d->opts, password, strlen(password), &names, &r);
    if (r.log[0])
        log_line(r.log);
    if (r.accept)
        return 0;
    krb5_error_code code = r.breached ? KADM5_PASS_Q_DICT : KADM5_PASS_Q_GENERIC;
    krb5_set_error_message(ctx, code, "%s", r.message);
    return code;
}

static void breachd_close(krb5_context ctx, krb5_pwqual_moddata d)
{
    (void)ctx;
    free(d);
}

krb5_error_code pwqual_breachd_initvt(krb5_context context, int maj_ver, int min_ver,
                                      krb5_plugin_vtable vtable)
{
    (void)context, (void)min_ver;
    if (maj_ver != 1)
        return KRB5_PLUGIN_VER_NOTSUPP;
    krb5_pwqual_vtable vt = (krb5_pwqual_vtable)vtable;
    vt->name = "breachd";
    vt->open = breachd_open;
    vt->check = breachd_check;
    vt->close = breachd_close;
    return 0;
}

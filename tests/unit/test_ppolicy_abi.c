/* SPDX-License-Identifier: MIT */
/* ppolicy_breachd.so's check_password() through both of slapd's calling
 * conventions (client/ldap/ppolicy_breachd.c): 2.5 passes a char * set to
 * NULL that the module points at a malloc'ed message, 2.6 a struct berval
 * with a buffer of bv_len bytes. The built module is dlopen'ed as slapd
 * does; breachd is absent (a socket path that does not exist), so every
 * call is an on_error decision; Debian 12's slapd (2.5) itself is in
 * tests/integration/test_directory_ldap.py. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct berval {
    unsigned long bv_len;
    char *bv_val;
};
typedef int (*check_fn)(char *, void *, void *, struct berval *);

static check_fn load(void)
{
    void *h = dlopen(PPOLICY_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        fail_msg("dlopen %s: %s", PPOLICY_MODULE, dlerror());
    check_fn f = (check_fn)(uintptr_t)dlsym(h, "check_password");
    assert_non_null(f);
    return f;
}

static struct berval arg(const char *s)
{
    return (struct berval){strlen(s), (char *)s};
}

static void test_25_message_allocated(void **state)
{
    (void)state;
    check_fn check = load();
    char pw[] = "correct horse battery";
    struct berval a = arg("socket=/nonexistent/breachd.sock timeout=200ms");
    char *msg = NULL;
    assert_int_not_equal(check(pw, &msg, NULL, &a), 0);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "could not be checked against known data breaches"));
    free(msg); /* slapd frees it the same way */
    /* on_error=allow: accepted, no message */
    a = arg("socket=/nonexistent/breachd.sock timeout=200ms on_error=allow");
    msg = NULL;
    assert_int_equal(check(pw, &msg, NULL, &a), 0);
    assert_null(msg);
    /* a bad option: refused, saying so */
    a = arg("socket=relative");
    assert_int_not_equal(check(pw, &msg, NULL, &a), 0);
    assert_non_null(strstr(msg, "misconfigured"));
    free(msg);
}

static void test_26_message_in_buffer(void **state)
{
    (void)state;
    check_fn check = load();
    char pw[] = "correct horse battery";
    struct berval a = arg("socket=/nonexistent/breachd.sock timeout=200ms");
    char buf[256];
    memset(buf, 'Z', sizeof(buf));
    buf[0] = '\0';
    struct berval msg = {sizeof(buf), buf};
    assert_int_not_equal(check(pw, &msg, NULL, &a), 0);
    assert_ptr_equal(msg.bv_val, buf);
    assert_int_equal(msg.bv_len, strlen(buf));
    assert_non_null(strstr(buf, "could not be checked"));
    /* a small buffer: cut, still terminated inside it */
    char small[16];
    memset(small, 'Z', sizeof(small));
    small[0] = '\0';
    struct berval m2 = {sizeof(small), small};
    assert_int_not_equal(check(pw, &m2, NULL, &a), 0);
    assert_int_equal(m2.bv_len, sizeof(small) - 1);
    assert_int_equal(small[sizeof(small) - 1], '\0');
    /* no argument at all: the defaults (the compiled-in socket, absent
     * here or not: either way a verdict, never a crash) */
    memset(buf, 0, sizeof(buf));
    msg = (struct berval){sizeof(buf), buf};
    int r = check(pw, &msg, NULL, NULL);
    assert_true(r == 0 || strlen(buf) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_25_message_allocated),
        cmocka_unit_test(test_26_message_in_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

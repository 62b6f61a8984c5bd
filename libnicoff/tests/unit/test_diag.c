/*
 * What helps a user diagnose: the version macros against nicoff_version(),
 * the names of statuses and opcodes, and the NICOFF_DEBUG log (a child
 * process runs with the variable set or not; its stderr is captured).
 * Strict C11, as test_capi.c.
 */
#include <nicoff/nicoff.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MISSING_DEVICE "/nonexistent/nicoff-diag-test"

static void test_version_macros(void **state) {
    char s[32];
    (void)state;
    snprintf(s, sizeof(s), "%d.%d.%d", NICOFF_VERSION_MAJOR, NICOFF_VERSION_MINOR,
             NICOFF_VERSION_PATCH);
    assert_string_equal(s, NICOFF_VERSION_STRING);
    assert_string_equal(nicoff_version(), NICOFF_VERSION_STRING);
    assert_true(
        NICOFF_VERSION_CHECK(NICOFF_VERSION_MAJOR, NICOFF_VERSION_MINOR, NICOFF_VERSION_PATCH));
    assert_true(NICOFF_VERSION_CHECK(0, 0, 0));
    assert_false(
        NICOFF_VERSION_CHECK(NICOFF_VERSION_MAJOR, NICOFF_VERSION_MINOR, NICOFF_VERSION_PATCH + 1));
    assert_false(NICOFF_VERSION_CHECK(NICOFF_VERSION_MAJOR, NICOFF_VERSION_MINOR + 1, 0));
    assert_false(NICOFF_VERSION_CHECK(NICOFF_VERSION_MAJOR + 1, 0, 0));
#if !NICOFF_VERSION_CHECK(0, 1, 0)
#error "the preprocessor must be able to compare versions"
#endif
}

/* Every opcode of the ABI's list has its own name, everything else none. */
static void test_opcode_names(void **state) {
    static const struct {
        int op;
        const char *name;
    } known[] = {
#define NICOFF_OPCODE(op, name) {NICOFF_OP_##op, #name},
#define NICOFF_OPCODE_CQE(op, name) {NICOFF_OP_##op, #name},
#include <nicoff/nicoff_lists.h>
#undef NICOFF_OPCODE
#undef NICOFF_OPCODE_CQE
    };
    const size_t n = sizeof(known) / sizeof(known[0]);
    int v;
    size_t i, j;
    (void)state;
    assert_int_equal(n, NICOFF_OP_MAX + 2); /* the commands and two completion-only */
    for (i = 0; i < n; i++) {
        assert_string_equal(nicoff_opcode_name((uint8_t)known[i].op), known[i].name);
        for (j = 0; j < i; j++)
            assert_string_not_equal(known[i].name, known[j].name);
    }
    assert_string_equal(nicoff_opcode_name(NICOFF_OP_NOP), "nop");
    assert_string_equal(nicoff_opcode_name(NICOFF_OP_FETCH_ADD), "fetch_add");
    assert_string_equal(nicoff_opcode_name(NICOFF_OP_BARRIER), "barrier");
    assert_string_equal(nicoff_opcode_name(NICOFF_OP_PORT_ERROR), "port_error");
    for (v = 0; v < 256; v++) {
        int listed = 0;
        for (i = 0; i < n; i++)
            listed |= known[i].op == v;
        if (!listed)
            assert_string_equal(nicoff_opcode_name((uint8_t)v), "unknown");
    }
}

static void test_strerror(void **state) {
    int e;
    (void)state;
    assert_string_equal(nicoff_strerror(0), "success");
    /* The card's meaning where it has one, the C library's otherwise. */
    assert_string_equal(nicoff_strerror(-ECONNREFUSED), "no port open at the destination");
    assert_string_equal(nicoff_strerror(-ETIMEDOUT),
                        "no answer from the peer within the retry budget");
    assert_string_equal(nicoff_strerror(-EPERM), "Operation not permitted");
    assert_string_equal(nicoff_strerror(1), "unknown status");
    assert_string_equal(nicoff_strerror(-1000000), "unknown status");
    assert_string_equal(nicoff_strerror(-2147483647 - 1), "unknown status");
    for (e = 1; e < 134; e++) {
        const char *s = nicoff_strerror(-e);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
    }
}

/* Runs this program with only `debug` (NULL: no NICOFF_DEBUG) in its
 * environment, to open a missing device; returns what it wrote to stderr. */
static char *child_stderr(const char *debug) {
    static char out[4096];
    char var[64];
    char *const argv[] = {"test_diag", "--open-missing", NULL};
    char *envp[] = {var, NULL};
    size_t len = 0;
    ssize_t r;
    int fds[2], status;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        if (debug)
            snprintf(var, sizeof(var), "NICOFF_DEBUG=%s", debug);
        else
            envp[0] = NULL;
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    close(fds[1]);
    while (len < sizeof(out) - 1 && (r = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    return out;
}

static void test_debug_log(void **state) {
    const char *out;
    (void)state;
    out = child_stderr("1");
    assert_non_null(strstr(out, "nicoff["));
    assert_non_null(strstr(out, "open " MISSING_DEVICE ": No such file or directory\n"));
    out = child_stderr("yes");
    assert_non_null(strstr(out, "open " MISSING_DEVICE));
    assert_string_equal(child_stderr(NULL), "");
    assert_string_equal(child_stderr("0"), "");
    assert_string_equal(child_stderr(""), "");
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_macros),
        cmocka_unit_test(test_opcode_names),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_debug_log),
    };
    if (argc == 2 && strcmp(argv[1], "--open-missing") == 0) {
        nicoff_device *dev;
        return nicoff_device_open_path(MISSING_DEVICE, &dev) == -ENOENT ? 0 : 1;
    }
    return cmocka_run_group_tests_name("libnicoff diagnostics", tests, NULL, NULL);
}

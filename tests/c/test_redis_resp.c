/*
 * core/redis/resp.c, the RESP command writer, without a server: the exact
 * bytes of commands (no arguments, empty ones, binary ones holding "\r\n"
 * and NUL, large ones, many), agreement with hiredis' own formatter, a
 * buffer kept and reused across commands (and given back after a large
 * one), commands appended behind others (a pipeline), and an allocation
 * that fails reported as BITT_ENOMEM with the buffer left usable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redis/redis_internal.h"

/* A failing allocation is asked for by size (below): ASan must answer it
 * with NULL, as libc does, instead of stopping the program. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void assert_bytes(const bitt_rd_buf *b, const char *want, size_t want_len)
{
    assert_int_equal(b->len, want_len);
    assert_true(b->cap >= b->len);
    assert_memory_equal(b->p, want, want_len);
}

/* The same command through hiredis: the bytes must match. */
static void assert_like_hiredis(const bitt_rd_buf *b, size_t argc, const char **argv,
                                const size_t *lens)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, (int)argc, argv, lens);
    assert_true(len >= 0);
    assert_bytes(b, cmd, (size_t)len);
    free(cmd);
}

static void no_arguments(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 0, NULL, NULL), BITT_OK);
    assert_bytes(&b, "*0\r\n", 4);
    bitt__rd_buf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.cap, 0);
}

static void empty_arguments(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *argv[3] = {"SET", "", ""};
    const size_t lens[3] = {3, 0, 0};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 3, argv, lens), BITT_OK);
    const char want[] = "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n";
    assert_bytes(&b, want, sizeof want - 1);
    assert_like_hiredis(&b, 3, argv, lens);
    bitt__rd_buf_free(&b);
}

static void c_strings(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *argv[2] = {"SUBSCRIBE", "{bitt}:wake"};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 2, argv, NULL), BITT_OK);
    const char want[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$11\r\n{bitt}:wake\r\n";
    assert_bytes(&b, want, sizeof want - 1);
    assert_like_hiredis(&b, 2, argv, NULL);
    bitt__rd_buf_free(&b);
}

static void binary_arguments(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    /* Lengths, not terminators, delimit: "\r\n" and NUL are data. */
    const char key[] = {'a', '\r', '\n', 'b'};
    const char value[] = {'\0', '\r', '\n', '\0', '$', '*', '\xff'};
    const char *argv[3] = {"HSET", key, value};
    const size_t lens[3] = {4, sizeof key, sizeof value};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 3, argv, lens), BITT_OK);
    const char want[] = "*3\r\n$4\r\nHSET\r\n$4\r\na\r\nb\r\n$7\r\n\0\r\n\0$*\xff\r\n";
    assert_bytes(&b, want, sizeof want - 1);
    assert_like_hiredis(&b, 3, argv, lens);
    bitt__rd_buf_free(&b);
}

/* One argument past the size a buffer is kept at, then a small command:
 * the bytes are exact both times and the large buffer is given back. */
static void large_argument(void **state)
{
    (void)state;
    const size_t n = 1000000;
    char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 7 + 1);
    bitt_rd_buf b = {0};
    const char *argv[2] = {"FUNCTION", big};
    const size_t lens[2] = {8, n};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 2, argv, lens), BITT_OK);
    const char head[] = "*2\r\n$8\r\nFUNCTION\r\n$1000000\r\n";
    assert_int_equal(b.len, sizeof head - 1 + n + 2);
    assert_memory_equal(b.p, head, sizeof head - 1);
    assert_memory_equal(b.p + sizeof head - 1, big, n);
    assert_memory_equal(b.p + b.len - 2, "\r\n", 2);
    assert_like_hiredis(&b, 2, argv, lens);
    const size_t large_cap = b.cap;

    const char *small[1] = {"PING"};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 1, small, NULL), BITT_OK);
    assert_bytes(&b, "*1\r\n$4\r\nPING\r\n", 14);
    assert_true(b.cap < large_cap);
    assert_true(b.cap <= 64 * 1024);
    bitt__rd_buf_free(&b);
    free(big);
}

/* Enough arguments for a multi-digit count; each a number of its own
 * length, so every length prefix differs. */
static void many_arguments(void **state)
{
    (void)state;
    enum { N = 1234 };
    const char **argv = calloc(N, sizeof *argv);
    size_t *lens = calloc(N, sizeof *lens);
    char *text = malloc(N * 16);
    assert_non_null(argv);
    assert_non_null(lens);
    assert_non_null(text);
    for (size_t i = 0; i < N; i++) {
        argv[i] = text + i * 16;
        lens[i] = (size_t)snprintf(text + i * 16, 16, "%zu", i * 1000003);
    }
    bitt_rd_buf b = {0};
    assert_int_equal(bitt__rd_resp_format(&b, "test", N, argv, lens), BITT_OK);
    assert_memory_equal(b.p, "*1234\r\n$1\r\n0\r\n$7\r\n1000003\r\n", 27);
    assert_like_hiredis(&b, N, argv, lens);
    bitt__rd_buf_free(&b);
    free(text);
    free(lens);
    free(argv);
}

/* Lengths on each side of a change in digit count, against hiredis. */
static void length_digits(void **state)
{
    (void)state;
    static const size_t sizes[] = {0,   1,    9,    10,    11,    99,    100,
                                   999, 1000, 9999, 10000, 10001, 99999, 100000};
    enum { N = sizeof sizes / sizeof sizes[0] };
    char *data = calloc(1, 100000);
    assert_non_null(data);
    const char *argv[N];
    for (size_t i = 0; i < N; i++)
        argv[i] = data;
    bitt_rd_buf b = {0};
    assert_int_equal(bitt__rd_resp_format(&b, "test", N, argv, sizes), BITT_OK);
    assert_like_hiredis(&b, N, argv, sizes);
    /* each count too, 0 to 10000 arguments */
    const char **many = calloc(10001, sizeof *many);
    assert_non_null(many);
    for (size_t i = 0; i <= 10000; i++)
        many[i] = "x";
    for (size_t i = 0; i < N && sizes[i] <= 10001; i++) {
        assert_int_equal(bitt__rd_resp_format(&b, "test", sizes[i], many, NULL), BITT_OK);
        assert_like_hiredis(&b, sizes[i], many, NULL);
    }
    bitt__rd_buf_free(&b);
    free(many);
    free(data);
}

/* A command the same size or smaller than the one before reuses the buffer:
 * no allocation in the steady state. */
static void buffer_reused(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *argv[4] = {"HMGET", "{bitt}:k:key:00000001", "v", "t"};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 4, argv, NULL), BITT_OK);
    char *first = b.p;
    size_t cap = b.cap;
    for (int i = 0; i < 100; i++) {
        argv[1] = i % 2 ? "{bitt}:k:key:00000002" : "{bitt}:k:k";
        assert_int_equal(bitt__rd_resp_format(&b, "test", 4, argv, NULL), BITT_OK);
        assert_ptr_equal(b.p, first);
        assert_int_equal(b.cap, cap);
        assert_like_hiredis(&b, 4, argv, NULL);
    }
    bitt__rd_buf_free(&b);
}

/* An allocation that fails (a size no allocator grants) is BITT_ENOMEM
 * with a message naming the call; the buffer keeps what it had and formats
 * the next command. */
static void out_of_memory(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *ping[1] = {"PING"};
    assert_int_equal(bitt__rd_resp_format(&b, "test", 1, ping, NULL), BITT_OK);
    char *kept = b.p;
    size_t cap = b.cap;

    /* The argument is never read: the size is refused first. */
    const char *argv[2] = {"SET", "x"};
    const size_t lens[2] = {3, SIZE_MAX / 4};
    assert_int_equal(bitt__rd_resp_format(&b, "kv set", 2, argv, lens), BITT_ENOMEM);
    assert_int_equal(bitt_error_last_code(), BITT_ENOMEM);
    assert_non_null(strstr(bitt_error_last(), "out of memory formatting kv set"));
    assert_int_equal(b.len, 0);
    assert_ptr_equal(b.p, kept);
    assert_int_equal(b.cap, cap);

    assert_int_equal(bitt__rd_resp_format(&b, "test", 1, ping, NULL), BITT_OK);
    assert_bytes(&b, "*1\r\n$4\r\nPING\r\n", 14);
    bitt__rd_buf_free(&b);
}

/* Lengths whose sum does not fit a size_t: BITT_ETOOLARGE, nothing read. */
static void size_overflow(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *argv[3] = {"SET", "x", "y"};
    const size_t lens[3] = {3, SIZE_MAX / 2, SIZE_MAX / 2};
    assert_int_equal(bitt__rd_resp_format(&b, "kv set", 3, argv, lens), BITT_ETOOLARGE);
    assert_int_equal(bitt_error_last_code(), BITT_ETOOLARGE);
    assert_non_null(strstr(bitt_error_last(), "kv set"));
    assert_null(b.p);
    const size_t one[2] = {3, SIZE_MAX - 5};
    assert_int_equal(bitt__rd_resp_format(&b, "kv set", 2, argv, one), BITT_ETOOLARGE);
    bitt__rd_buf_free(&b);
}

/* Appending (a pipeline's buffer, core/redis/pipe.c): each command after
 * the ones before, byte for byte; one that cannot be written leaves them
 * as they were. */
static void appended(void **state)
{
    (void)state;
    bitt_rd_buf b = {0};
    const char *set[3] = {"SET", "k", "v\r\n"};
    const char *get[2] = {"GET", "k"};
    assert_int_equal(bitt__rd_resp_append(&b, "test", 3, set, NULL), BITT_OK);
    for (int i = 0; i < 200; i++) /* past the first capacity: the buffer grows */
        assert_int_equal(bitt__rd_resp_append(&b, "test", 2, get, NULL), BITT_OK);
    const char s[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n";
    const char g[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    size_t sl = sizeof s - 1, gl = sizeof g - 1;
    assert_int_equal(b.len, sl + 200 * gl);
    assert_memory_equal(b.p, s, sl);
    for (int i = 0; i < 200; i++)
        assert_memory_equal(b.p + sl + (size_t)i * gl, g, gl);
    const char *huge[2] = {"SET", "x"};
    const size_t lens[2] = {3, SIZE_MAX / 4};
    assert_int_equal(bitt__rd_resp_append(&b, "kv set", 2, huge, lens), BITT_ENOMEM);
    assert_int_equal(b.len, sl + 200 * gl);
    assert_memory_equal(b.p, s, sl);
    assert_int_equal(bitt__rd_resp_format(&b, "test", 2, get, NULL), BITT_OK); /* replaces */
    assert_bytes(&b, g, gl);
    bitt__rd_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_arguments),   cmocka_unit_test(empty_arguments),
        cmocka_unit_test(c_strings),      cmocka_unit_test(binary_arguments),
        cmocka_unit_test(large_argument), cmocka_unit_test(many_arguments),
        cmocka_unit_test(buffer_reused),  cmocka_unit_test(out_of_memory),
        cmocka_unit_test(size_overflow),  cmocka_unit_test(length_digits),
        cmocka_unit_test(appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

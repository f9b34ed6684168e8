/*
 * The memory backend (core/memory/) driven through its vtable against a
 * plain model: random commits (checks, sets, deletes, takes, sums that may
 * fail), clock moves, gets, lists over random ranges both ways, and purges.
 * Each step compares every outcome, so the ordered map, the hash index and
 * the all-or-nothing commit are checked together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "memory/ordered_map.h"

/* ---- the key space: every key of 0-2 bytes over 4 symbols, sorted ------ */

enum { NKEYS = 1 + 4 + 16 };

typedef struct mkey {
    uint8_t bytes[2];
    size_t len;
} mkey;

static mkey keys[NKEYS];

static int mkey_cmp(const void *a, const void *b)
{
    const mkey *x = a, *y = b;
    return bitt__omap_cmp(x->bytes, x->len, y->bytes, y->len);
}

static void make_keys(void)
{
    static const uint8_t sym[4] = {0x00, 'a', 'b', 0xff};
    size_t n = 0;
    keys[n++].len = 0;
    for (int i = 0; i < 4; i++) {
        keys[n].bytes[0] = sym[i];
        keys[n++].len = 1;
        for (int j = 0; j < 4; j++) {
            keys[n].bytes[0] = sym[i];
            keys[n].bytes[1] = sym[j];
            keys[n++].len = 2;
        }
    }
    qsort(keys, NKEYS, sizeof *keys, mkey_cmp);
}

/* ---- the model ----------------------------------------------------------- */

typedef struct mrow {
    int present; /* a row is stored (maybe expired) */
    uint8_t value[24];
    size_t len;
    int kind;
    uint64_t version;
    int64_t expires_at;
} mrow;

typedef struct model {
    mrow rows[NKEYS];
    uint64_t version;
    int64_t now;
} model;

static int mlive(const model *m, const mrow *r)
{
    return r->present && bitt__live(r->expires_at, m->now);
}

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

/* ---- comparing the backend with the model ------------------------------- */

static void expect_entry(const bitt_entry *e, const model *m, size_t k)
{
    const mrow *r = &m->rows[k];
    assert_non_null(e);
    assert_int_equal(e->key_len, keys[k].len);
    assert_memory_equal(e->key, keys[k].bytes, e->key_len);
    assert_int_equal(e->value_len, r->len);
    assert_memory_equal(e->value, r->value, r->len);
    assert_int_equal(e->kind, r->kind);
    assert_int_equal(e->version, r->version);
    assert_int_equal(e->expires_at, r->expires_at);
}

static void check_gets(bitt_backend *be, const model *m)
{
    bitt_time t = {m->now, 1};
    for (size_t k = 0; k < NKEYS; k++) {
        bitt_entry *e = NULL;
        int rc = bitt__memory_backend.kv_get(be, &t, keys[k].bytes, keys[k].len, &e);
        if (mlive(m, &m->rows[k])) {
            assert_int_equal(rc, BITT_OK);
            expect_entry(e, m, k);
        } else {
            assert_int_equal(rc, BITT_NOTFOUND);
            assert_null(e);
        }
        bitt_entry_free(e);
    }
    /* One get-many of every key, in reverse, one slot each. */
    const uint8_t *ks[NKEYS];
    size_t lens[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        ks[i] = keys[NKEYS - 1 - i].bytes;
        lens[i] = keys[NKEYS - 1 - i].len;
    }
    bitt_entries *list = bitt__entries_new(0);
    assert_non_null(list);
    assert_int_equal(bitt__memory_backend.kv_get_many(be, &t, ks, lens, NKEYS, list), BITT_OK);
    assert_int_equal(list->count, NKEYS);
    for (size_t i = 0; i < NKEYS; i++) {
        size_t k = NKEYS - 1 - i;
        if (mlive(m, &m->rows[k]))
            expect_entry(list->items[i], m, k);
        else
            assert_null(list->items[i]);
    }
    bitt_entries_free(list);
}

static void check_list(bitt_backend *be, const model *m)
{
    size_t lo = rnd(NKEYS), hi = lo + rnd(NKEYS - lo + 1); /* keys [lo, hi) */
    int has_hi = hi < NKEYS || rnd(2);
    bitt_range r = {keys[lo].bytes, keys[lo].len, NULL, 0, has_hi, (int)rnd(2), rnd(8)};
    if (has_hi && hi < NKEYS) {
        r.hi = keys[hi].bytes;
        r.hi_len = keys[hi].len;
    } else if (has_hi) { /* a bound above every key */
        static const uint8_t top[3] = {0xff, 0xff, 0xff};
        r.hi = top;
        r.hi_len = 3;
    }
    bitt_time t = {m->now, 1};
    bitt_entries *list = bitt__entries_new(0);
    assert_non_null(list);
    assert_int_equal(bitt__memory_backend.kv_list(be, &t, &r, list), BITT_OK);
    size_t got = 0;
    for (size_t i = 0; i < hi - lo && got < r.limit; i++) {
        size_t k = r.reverse ? hi - 1 - i : lo + i;
        if (!mlive(m, &m->rows[k]))
            continue;
        assert_true(got < list->count);
        expect_entry(list->items[got++], m, k);
    }
    assert_int_equal(list->count, got);
    bitt_entries_free(list);
}

/* ---- random commits ------------------------------------------------------ */

static const char *const values[] = {"0", "7", "-3", "9223372036854775806", "x", "", "\"j\""};

static bitt_op random_op(const model *m)
{
    size_t k = rnd(NKEYS);
    bitt_op op = {.key = keys[k].bytes, .key_len = keys[k].len};
    switch (rnd(4)) {
    case 0:
        op.type = BITT_OP_CHECK;
        /* Mostly the right answer, so commits get through. */
        op.version = mlive(m, &m->rows[k]) ? m->rows[k].version : 0;
        if (!rnd(5))
            op.version = rnd(3) ? op.version + 1 : 0;
        break;
    case 1: {
        const char *v = values[rnd(sizeof values / sizeof *values)];
        op.type = BITT_OP_SET;
        op.value = (const uint8_t *)v;
        op.value_len = strlen(v);
        op.kind = BITT_KIND_COUNTER;
        if (v[0] == 'x' || !v[0])
            op.kind = BITT_KIND_BYTES;
        else if (v[0] == '"')
            op.kind = BITT_KIND_JSON;
        op.ttl_ms = rnd(3) ? 0 : 1 + rnd(20);
        break;
    }
    case 2:
        op.type = BITT_OP_DELETE;
        op.want_old = (int)rnd(2);
        break;
    default:
        op.type = BITT_OP_SUM;
        op.delta = rnd(4) ? (int64_t)rnd(5) - 2 : 2;
        op.ttl_ms = rnd(2) ? 0 : 1 + rnd(20);
        break;
    }
    return op;
}

static size_t key_index(const bitt_op *op)
{
    mkey k = {{0, 0}, op->key_len};
    memcpy(k.bytes, op->key, op->key_len);
    mkey *at = bsearch(&k, keys, NKEYS, sizeof *keys, mkey_cmp);
    assert_non_null(at);
    return (size_t)(at - keys);
}

/* What the commit should do: the status, and on success the new model and
 * each op's results (found, result) in want[]. */
static int model_commit(model *m, const bitt_op *ops, size_t n, bitt_op *want, size_t *failed)
{
    for (size_t i = 0; i < n; i++) {
        const mrow *r = &m->rows[key_index(&ops[i])];
        if (ops[i].type != BITT_OP_CHECK)
            continue;
        int ok = ops[i].version ? mlive(m, r) && r->version == ops[i].version : !mlive(m, r);
        if (!ok) {
            *failed = i;
            return BITT_ECONFLICT;
        }
    }
    model next = *m;
    uint64_t v = m->version + 1;
    for (size_t i = 0; i < n; i++) {
        mrow *r = &next.rows[key_index(&ops[i])];
        int live = mlive(&next, r);
        want[i] = ops[i];
        switch (ops[i].type) {
        case BITT_OP_SET:
            *r = (mrow){.present = 1,
                        .len = ops[i].value_len,
                        .kind = ops[i].kind,
                        .version = v,
                        .expires_at = bitt__expiry(m->now, ops[i].ttl_ms)};
            memcpy(r->value, ops[i].value, ops[i].value_len);
            break;
        case BITT_OP_DELETE:
            /* old: only whether there is one (a marker), its version and size */
            want[i].found = live;
            want[i].old = live && ops[i].want_old ? (bitt_entry *)r : NULL;
            want[i].version = r->version;
            want[i].value_len = r->len;
            r->present = 0;
            break;
        case BITT_OP_SUM: {
            char text[21];
            size_t len;
            int rc = bitt__sum_apply(live, r->kind, r->value, r->len, ops[i].delta, text, &len,
                                     &want[i].result);
            if (rc) {
                *failed = i;
                return rc;
            }
            memcpy(r->value, text, len);
            r->len = len;
            r->kind = BITT_KIND_COUNTER;
            r->version = v;
            if (!live)
                r->expires_at = bitt__expiry(m->now, ops[i].ttl_ms);
            r->present = 1;
            break;
        }
        }
    }
    next.version = v;
    *m = next;
    return BITT_OK;
}

static void random_commit(bitt_backend *be, model *m)
{
    bitt_op ops[12], want[12];
    size_t n = 1 + rnd(rnd(4) ? 4 : 12); /* now and then more than fit the stack */
    for (size_t i = 0; i < n; i++)
        ops[i] = random_op(m);
    model before = *m;
    size_t want_failed = SIZE_MAX;
    int want_rc = model_commit(m, ops, n, want, &want_failed);

    bitt_commit c = {.ops = ops, .count = n, .time = {before.now, 1}, .failed = SIZE_MAX};
    int rc = bitt__memory_backend.commit(be, &c);
    assert_int_equal(rc, want_rc);
    bitt__error_reset();
    if (rc == BITT_ECONFLICT)
        assert_int_equal(c.failed, want_failed);
    if (rc) {
        for (size_t i = 0; i < n; i++)
            assert_null(ops[i].old);
        return;
    }
    assert_int_equal(c.version, m->version);
    for (size_t i = 0; i < n; i++) {
        if (ops[i].type == BITT_OP_DELETE) {
            assert_int_equal(ops[i].found, want[i].found);
            assert_int_equal(ops[i].old != NULL, want[i].old != NULL);
            if (ops[i].old) { /* the value before the delete, possibly this commit's */
                assert_int_equal(ops[i].old->key_len, ops[i].key_len);
                assert_int_equal(ops[i].old->version, want[i].version);
                assert_int_equal(ops[i].old->value_len, want[i].value_len);
            }
            bitt_entry_free(ops[i].old);
        } else if (ops[i].type == BITT_OP_SUM) {
            assert_int_equal(ops[i].result, want[i].result);
        }
    }
}

static void test_backend_against_model(void **state)
{
    (void)state;
    make_keys();
    bitt_url url = {.scheme = "memory", .rest = ""};
    bitt_limits limits = {.max_key_size = BITT_DEFAULT_MAX_KEY_SIZE,
                          .max_value_size = BITT_DEFAULT_MAX_VALUE_SIZE};
    bitt_backend *be = NULL;
    assert_int_equal(bitt__memory_backend.open(&url, &limits, &be), BITT_OK);
    assert_int_equal(bitt__memory_backend.migrate(be), BITT_OK);
    model m = {.now = 1000};

    for (int step = 0; step < 20000; step++) {
        uint32_t what = rnd(20);
        if (what < 12) {
            random_commit(be, &m);
        } else if (what < 14) {
            m.now += rnd(8);
        } else if (what < 16) {
            check_list(be, &m);
        } else if (what < 17) {
            bitt_time t = {m.now, 1};
            uint64_t removed = 0, want = 0;
            assert_int_equal(bitt__memory_backend.kv_purge(be, &t, &removed), BITT_OK);
            for (size_t k = 0; k < NKEYS; k++)
                if (m.rows[k].present && !mlive(&m, &m.rows[k])) {
                    m.rows[k].present = 0;
                    want++;
                }
            assert_int_equal(removed, want);
        } else {
            check_gets(be, &m);
        }
    }
    check_gets(be, &m);
    bitt__memory_backend.close(be);
}

static void test_open_refuses_a_path(void **state)
{
    (void)state;
    bitt_url url = {.scheme = "memory", .rest = "somewhere"};
    bitt_limits limits = {.max_key_size = BITT_DEFAULT_MAX_KEY_SIZE,
                          .max_value_size = BITT_DEFAULT_MAX_VALUE_SIZE};
    bitt_backend *be = (bitt_backend *)&url;
    assert_int_equal(bitt__memory_backend.open(&url, &limits, &be), BITT_EURL);
    assert_null(be);
    bitt__error_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_against_model),
        cmocka_unit_test(test_open_refuses_a_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

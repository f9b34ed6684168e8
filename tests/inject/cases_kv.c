/* Injection cases: the store, the clock, KV reads and writes, commits. */
#include <string.h>

#include "inject.h"

#define KEY(s) s, strlen(s)

static int call_open(inj_ctx *c)
{
    int rc = bitt_store_open(c->url, &c->other);
    if (rc == BITT_OK && strcmp(bitt_store_backend(c->other), bitt_store_backend(c->store)))
        return BITT_EINVAL;
    bitt_store_close(c->other);
    c->other = NULL;
    return rc;
}

/* A new database: the schema is created under faults. */
static int call_open_new(inj_ctx *c)
{
    int rc = bitt_store_open(c->new_url, &c->other);
    if (!rc)
        rc = bitt_kv_set(c->other, KEY("k"), KEY("v"), BITT_KIND_BYTES, 0, NULL);
    return rc;
}

static int call_migrate(inj_ctx *c)
{
    return bitt_store_migrate(c->store);
}

static int call_clock(inj_ctx *c)
{
    int64_t now = 0;
    int rc = bitt_clock_now(c->store, &now);
    if (!rc)
        rc = bitt_clock_advance(c->store, 0);
    if (!rc)
        rc = bitt_clock_use_system(c->store);
    if (!rc)
        rc = bitt_clock_set_manual(c->store, now);
    return rc;
}

static int call_get(inj_ctx *c)
{
    int rc = bitt_kv_get(c->store, KEY("c"), &c->entry);
    if (rc)
        return rc;
    size_t kl, vl;
    int64_t n = 0;
    if (!bitt_entry_key(c->entry, &kl) || !bitt_entry_value(c->entry, &vl) ||
        bitt_entry_kind(c->entry) != BITT_KIND_COUNTER || !bitt_entry_version(c->entry) ||
        bitt_entry_expires_at(c->entry) != 0 || bitt_entry_counter(c->entry, &n) || n != 5)
        return BITT_EINVAL;
    bitt_entry_free(c->entry);
    c->entry = NULL;
    return BITT_OK;
}

static int call_get_many(inj_ctx *c)
{
    const void *keys[] = {"a", "nope", "b", "x"};
    size_t lens[] = {1, 4, 1, 1};
    int rc = bitt_kv_get_many(c->store, keys, lens, 4, &c->entries);
    if (rc)
        return rc;
    if (bitt_entries_count(c->entries) != 4 || !bitt_entries_at(c->entries, 0) ||
        bitt_entries_at(c->entries, 1) || bitt_entries_at(c->entries, 3))
        return BITT_EINVAL;
    bitt_entries_free(c->entries);
    c->entries = NULL;
    return BITT_OK;
}

/* Two pages: the second resumes from the first one's cursor. */
static int call_list(inj_ctx *c)
{
    bitt_list_options o;
    int rc = bitt_list_options_init(&o, BITT_LIST_OPTIONS_VERSION);
    if (rc)
        return rc;
    o.limit = 2;
    rc = bitt_kv_list(c->store, &o, &c->entries);
    if (rc)
        return rc;
    const char *cursor = bitt_entries_cursor(c->entries);
    if (!cursor)
        return BITT_EINVAL;
    o.cursor = cursor;
    bitt_entries *page = NULL;
    rc = bitt_kv_list(c->store, &o, &page);
    if (!rc && bitt_entries_count(page) != 2)
        rc = BITT_EINVAL;
    bitt_entries_free(page);
    return rc;
}

static int call_set(inj_ctx *c)
{
    return bitt_kv_set(c->store, KEY("a"), KEY("[1,2,3]"), BITT_KIND_JSON, 5000, NULL);
}

static int call_delete(inj_ctx *c)
{
    return bitt_kv_delete(c->store, KEY("b"));
}

static int call_add(inj_ctx *c)
{
    return bitt_kv_add(c->store, KEY("x"), KEY("again"), BITT_KIND_BYTES, 0, NULL);
}

static int call_take(inj_ctx *c)
{
    return bitt_kv_take(c->store, KEY("a"), &c->entry);
}

static int call_increment(inj_ctx *c)
{
    int64_t v = 0;
    return bitt_kv_increment(c->store, KEY("c"), -7, 0, &v, NULL);
}

static int call_purge(inj_ctx *c)
{
    uint64_t removed = 0;
    int rc = bitt_kv_purge_expired(c->store, &removed);
    return rc ? rc : removed == 2 ? BITT_OK : BITT_EINVAL;
}

static int call_txn_begin(inj_ctx *c)
{
    int rc = bitt_txn_begin(c->store, &c->txn);
    bitt_txn_free(c->txn);
    c->txn = NULL;
    return rc;
}

static int prepare_txn(inj_ctx *c)
{
    return bitt_txn_begin(c->store, &c->txn);
}

static int call_txn_check(inj_ctx *c)
{
    return bitt_txn_check(c->txn, KEY("a"), c->version_a);
}

static int call_txn_set(inj_ctx *c)
{
    return bitt_txn_set(c->txn, KEY("n"), KEY("new"), BITT_KIND_BYTES, 0);
}

static int call_txn_delete(inj_ctx *c)
{
    return bitt_txn_delete(c->txn, KEY("b"));
}

static int call_txn_sum(inj_ctx *c)
{
    return bitt_txn_sum(c->txn, KEY("c"), 10);
}

static int call_txn_enqueue(inj_ctx *c)
{
    return bitt_txn_enqueue(c->txn, "jobs", KEY("four"), BITT_KIND_BYTES, NULL);
}

static int call_txn_fence(inj_ctx *c)
{
    return bitt_txn_fence(c->txn, "lock", "w1", c->lease_epoch);
}

static int call_txn_outbox(inj_ctx *c)
{
    return bitt_txn_outbox_append(c->txn, "events", KEY("{\"n\":5}"), BITT_KIND_JSON);
}

/* check + set + delete + sum + enqueue + fence + outbox in one commit: a
 * failure anywhere must leave none of them written. */
static int prepare_full_txn(inj_ctx *c)
{
    int rc = prepare_txn(c);
    int (*steps[])(inj_ctx *) = {call_txn_check,   call_txn_set,   call_txn_delete, call_txn_sum,
                                 call_txn_enqueue, call_txn_fence, call_txn_outbox};
    for (size_t i = 0; !rc && i < sizeof steps / sizeof *steps; i++)
        rc = steps[i](c);
    return rc;
}

static int call_txn_commit(inj_ctx *c)
{
    uint64_t version = 0;
    int rc = bitt_txn_commit(c->txn, &version);
    return rc ? rc : version > c->version_a ? BITT_OK : BITT_EINVAL;
}

/* A commit whose check fails: BITT_ECONFLICT and nothing written. */
static int prepare_conflict_txn(inj_ctx *c)
{
    int rc = prepare_full_txn(c);
    return rc ? rc : bitt_txn_check(c->txn, KEY("c"), 0);
}

static int call_txn_conflict(inj_ctx *c)
{
    return bitt_txn_commit(c->txn, NULL);
}

const inj_case inj_kv_cases[] = {
    {"store_open", "bitt_store_open bitt_store_backend bitt_store_close", NULL, call_open, 0, 0},
    {"store_open_new", "bitt_store_open bitt_kv_set", NULL, call_open_new, 0, 0},
    {"store_migrate", "bitt_store_migrate", NULL, call_migrate, 0, 0},
    {"clock", "bitt_clock_now bitt_clock_advance bitt_clock_use_system bitt_clock_set_manual", NULL,
     call_clock, 0, 0},
    {"kv_get",
     "bitt_kv_get bitt_entry_key bitt_entry_value bitt_entry_kind bitt_entry_version "
     "bitt_entry_expires_at bitt_entry_counter bitt_entry_free",
     NULL, call_get, 0, 0},
    {"kv_get_many", "bitt_kv_get_many bitt_entries_count bitt_entries_at bitt_entries_free", NULL,
     call_get_many, 0, 0},
    {"kv_list", "bitt_list_options_init bitt_kv_list bitt_entries_cursor", NULL, call_list, 0, 0},
    {"kv_set", "bitt_kv_set", NULL, call_set, 0, 0},
    {"kv_delete", "bitt_kv_delete", NULL, call_delete, 0, 0},
    {"kv_add", "bitt_kv_add", NULL, call_add, 0, 0},
    {"kv_take", "bitt_kv_take", NULL, call_take, 0, 0},
    {"kv_increment", "bitt_kv_increment", NULL, call_increment, 0, 0},
    {"kv_purge_expired", "bitt_kv_purge_expired", NULL, call_purge, 0, 0},
    {"txn_begin", "bitt_txn_begin bitt_txn_free", NULL, call_txn_begin, 0, 0},
    {"txn_check", "bitt_txn_check", prepare_txn, call_txn_check, 0, INJ_AFTER_TXN_FAILED},
    {"txn_set", "bitt_txn_set", prepare_txn, call_txn_set, 0, INJ_AFTER_TXN_FAILED},
    {"txn_delete", "bitt_txn_delete", prepare_txn, call_txn_delete, 0, INJ_AFTER_TXN_FAILED},
    {"txn_sum", "bitt_txn_sum", prepare_txn, call_txn_sum, 0, INJ_AFTER_TXN_FAILED},
    {"txn_enqueue", "bitt_txn_enqueue", prepare_txn, call_txn_enqueue, 0, INJ_AFTER_TXN_FAILED},
    {"txn_fence", "bitt_txn_fence", prepare_txn, call_txn_fence, 0, INJ_AFTER_TXN_FAILED},
    {"txn_outbox_append", "bitt_txn_outbox_append", prepare_txn, call_txn_outbox, 0,
     INJ_AFTER_TXN_FAILED},
    {"txn_commit", "bitt_txn_commit", prepare_full_txn, call_txn_commit, 0, INJ_AFTER_USED},
    {"txn_commit_conflict", "bitt_txn_commit", prepare_conflict_txn, call_txn_conflict,
     BITT_ECONFLICT, INJ_AFTER_USED},
};
const size_t inj_kv_case_count = sizeof inj_kv_cases / sizeof *inj_kv_cases;

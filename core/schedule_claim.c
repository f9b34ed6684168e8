/*
 * Claiming a schedule's occurrence: the backend finds the earliest due one
 * (a read), the engine works out the next occurrence (interval or cron,
 * one arithmetic for every backend) and commits the move from this
 * occurrence to the next, guarded by the occurrence it read, together with
 * the enqueue of a schedule with a topic. Two claimers of one occurrence:
 * one commit moves it, the other's guard fails and it looks again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "internal.h"

/* Claims that lost to another claimer, in a row, before giving up: each
 * loss means another process claimed an occurrence, so the schedules move
 * on; this only bounds a pathological storm. */
#define CLAIM_TRIES 1000

/* The occurrence after s's due one: next_run_at past now. */
static int next_occurrence(const bitt_schedule *s, int64_t now, int64_t *next)
{
    if (!s->cron) {
        *next = bitt__schedule_advance(s->next_run_at, s->interval_ms, now);
        return BITT_OK;
    }
    bitt_cron c;
    int rc = bitt__cron_parse(s->cron, &c);
    if (rc)
        return bitt__fail(BITT_EBACKEND,
                          "schedule %s holds a cron expression this library "
                          "refuses: %s",
                          s->key, bitt_error_last());
    *next = bitt__cron_next(&c, now);
    return BITT_OK;
}

/* One try: BITT_OK with *out, BITT_NOTFOUND, BITT_ECONFLICT when another
 * claimer moved the schedule first, or a failure. */
static int claim_once(bitt_store *store, const char *prefix, bitt_schedule **out)
{
    bitt_time t;
    bitt_schedule *s = NULL;
    bitt__store_enter(store, &t);
    int rc = store->ops->schedule_due(store->be, &t, prefix, &s);
    bitt__store_leave(store);
    if (rc)
        return rc;
    /* the backend's now, as it judged the schedule due (a server's clock
     * decides there), so that the next occurrence is past it too */
    int64_t occurrence = s->next_run_at, judged = s->occurrence ? s->occurrence : t.now, next = 0;
    rc = next_occurrence(s, judged, &next);
    bitt_op ops[2] = {
        {.type = BITT_OP_SCHEDULE_ADVANCE, .name = s->key, .delta = occurrence, .delay_ms = next}};
    size_t count = 1;
    char dedup[BITT_NAME_MAX + 24];
    if (!rc && s->topic) {
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        int n = snprintf(dedup, sizeof dedup, "%s@%" PRId64, s->key, occurrence);
        o.dedup_key = dedup;
        o.dedup_key_len = (size_t)n;
        o.max_attempts = s->max_attempts;
        o.priority = s->priority;
        rc = bitt__enqueue_op(store, s->topic, s->payload, s->payload_len, s->kind, &o, &ops[1]);
        count = 2;
    }
    if (!rc)
        rc = bitt__run_commit(store, ops, count, NULL);
    if (rc) {
        free(s);
        return rc;
    }
    s->occurrence = occurrence;
    s->next_run_at = next;
    s->message_id = count == 2 ? ops[1].id : 0;
    *out = s;
    return BITT_OK;
}

int bitt_schedule_claim(bitt_store *store, const char *prefix, bitt_schedule **out)
{
    bitt__error_reset();
    if (!out)
        return bitt__fail(BITT_EINVAL, "out must not be NULL");
    *out = NULL;
    int rc = bitt__check_schedules(store);
    if (!rc && prefix && *prefix)
        rc = bitt__check_name(prefix, "schedule key prefix");
    if (rc)
        return rc;
    prefix = prefix ? prefix : "";
    for (int i = 0; i < CLAIM_TRIES; i++) {
        rc = claim_once(store, prefix, out);
        if (rc != BITT_ECONFLICT)
            return rc;
        bitt__error_reset();
    }
    return bitt__fail(BITT_EBUSY, "schedule claim lost to other claimers %d times in a row",
                      CLAIM_TRIES);
}

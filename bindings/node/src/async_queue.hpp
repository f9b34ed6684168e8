/*
 * async_queue.hpp: the Promise API's queue-control calls (bitt.h 0.6): the
 * enqueue with a priority, a dequeue over several topics and the calls on a
 * message by id; and version 7's ack with a result, purge and schedule set.
 * As async_ops.hpp: read the JS arguments into owned copies
 * on the main thread, name the C call the worker makes; each resolves with
 * the shape of SWIG's synchronous wrapper of the same name. Included by
 * async.hpp after async_ops.hpp.
 */
#ifndef BITT_NODE_ASYNC_QUEUE_HPP
#define BITT_NODE_ASYNC_QUEUE_HPP

BITTW_ASYNC(bittw_queue_enqueue2)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    std::string payload = a.bytes(2, "payload");
    int kind = a.int_(3, "kind");
    int64_t delay = a.i64(4, "delay_ms");
    uint32_t max_attempts = a.u32(5, "max_attempts");
    BittwOpt dedup = a.opt_bytes(6, "dedup");
    int32_t priority = a.i32(7, "priority");
    return BITTW_RUN({
        return bittw_queue_enqueue2(s, topic.c(), payload.data(), payload.size(), kind, delay, max_attempts,
                                    dedup.p(), dedup.n(), priority, o.u64());
    });
}

/* (store, topics, limit, lease, wait, cancel): a wait runs on the wait pool,
 * after the same call without waiting found nothing (as bittw_queue_dequeue). */
BITTW_ASYNC(bittw_queue_dequeue_topics)
{
    BITTW_STORE_ARGS;
    std::shared_ptr<std::vector<std::string>> topics = a.texts(1, "topics");
    uint32_t limit = a.u32(2, "limit");
    int64_t lease = a.i64(3, "lease_ms"), wait = a.i64(4, "wait_ms");
    bittw_cancel_ptr cancel = a.cancel(5); /* optional: lib/cancel.js fires it */
    auto call = [=](bitt_store *s, BittwOuts &o, int64_t w) {
        std::vector<const char *> names(topics->size() + 1);
        for (size_t i = 0; i < topics->size(); i++)
            names[i] = (*topics)[i].c_str();
        return bittw_queue_dequeue_topics(s, names.data(), topics->size(), limit, lease, w, cancel.get(),
                                          o.messages());
    };
    auto run = [=](bitt_store *s, BittwOuts &o) { return call(s, o, wait); };
    auto now = [=](bitt_store *s, BittwOuts &o) { return call(s, o, 0); };
    return bittw_queue(a, box, BittwJob::ENTER, run, wait > 0, wait > 0 ? BittwJob::Run(now) : nullptr);
}
BITTW_ASYNC(bitt_queue_get)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    return BITTW_RUN({ return bitt_queue_get(s, topic.c(), id, o.message()); });
}
BITTW_ASYNC(bitt_queue_cancel)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    return BITTW_RUN({ (void)o; return bitt_queue_cancel(s, topic.c(), id); });
}
BITTW_ASYNC(bitt_queue_reschedule)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    int64_t delay = a.i64(3, "delay_ms");
    return BITTW_RUN({ (void)o; return bitt_queue_reschedule(s, topic.c(), id, delay); });
}

/* Version 7 (queue retention, cron/topic schedules). */
BITTW_ASYNC(bitt_queue_ack_result)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    BittwOpt token = a.text(3, "token");
    BittwOpt result = a.opt_bytes(4, "result");
    int kind = a.int_(5, "kind");
    return BITTW_RUN({
        (void)o;
        return bitt_queue_ack_result(s, topic.c(), id, token.c(), result.p(), result.n(), kind);
    });
}
BITTW_ASYNC(bitt_queue_purge)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    return BITTW_RUN({ return bitt_queue_purge(s, topic.c(), o.u64()); });
}
BITTW_ASYNC(bittw_schedule_set)
{
    BITTW_STORE_ARGS;
    BittwOpt key = a.text(1, "key");
    int64_t interval = a.i64(2, "interval_ms");
    std::string payload = a.bytes(3, "payload");
    int kind = a.int_(4, "kind");
    BittwOpt cron = a.text(5, "cron");
    int64_t first = a.i64(6, "first_run_at");
    BittwOpt topic = a.text(7, "topic");
    uint32_t max_attempts = a.u32(8, "max_attempts");
    int32_t priority = a.i32(9, "priority");
    return BITTW_RUN({
        (void)o;
        return bittw_schedule_set(s, key.c(), interval, payload.data(), payload.size(), kind, cron.c(), first,
                                  topic.c(), max_attempts, priority);
    });
}

#endif

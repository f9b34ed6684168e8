/*
 * async_ops.hpp: the Promise API's calls, one function each: read the JS
 * arguments into owned copies (main thread) and name the C call the worker
 * makes (async.hpp). Each resolves with the shape SWIG's synchronous
 * wrapper of the same name returns. Included by async.hpp.
 */
#ifndef BITT_NODE_ASYNC_OPS_HPP
#define BITT_NODE_ASYNC_OPS_HPP

/* Queues the call: a Promise, or undefined with a TypeError thrown when an
 * argument was wrong. A call that may wait (waits) runs on the wait pool
 * (async.hpp), a network store's other calls on fibers of this thread
 * (fibers.hpp), every other on the dispatcher's threads (dispatch.hpp). */
static Napi::Value bittw_queue(BittwArgs &a, bittw_store *box, BittwJob::Mode mode, BittwJob::Run run,
                               bool waits = false, BittwJob::Run first = nullptr)
{
    if (!a.ok())
        return Napi::Value();
    BittwFibers *fibers = mode == BittwJob::ENTER ? BittwFibers::of(a.env()) : nullptr;
    /* A wait with a `first` (the same call without waiting): that runs on a
     * fiber, and only when it finds nothing does the waiting call go to a
     * wait thread, so a busy queue's dequeues cost no thread hand-off. */
    bool try_first = waits && first && fibers;
    BittwJob *job = new BittwJob(a.env(), box, mode, std::move(try_first ? first : run));
    Napi::Promise pr = job->Promise();
    if (try_first) {
        job->ThenWait(std::move(run));
        if (fibers->run(a.env(), box, job))
            return pr;
        job->UseWaiting(); /* no fiber free: the waiting call at once */
    }
    if (waits && BittwWaitPool::get().submit(a.env(), job))
        return pr;
    /* a network store's prompt call: on a fiber of this thread (fibers.hpp) */
    if (!waits && fibers && fibers->run(a.env(), box, job))
        return pr;
    if (BittwDispatch::get().submit(a.env(), job))
        return pr;
    delete job;
    Napi::Error::New(a.env(), "bitt: Node-API could not queue the call").ThrowAsJavaScriptException();
    return Napi::Value();
}

/* The store calls: (store, args...) -> Promise of [status, out...]. */
#define BITTW_ASYNC(NAME) static Napi::Value bittw_async_##NAME(const Napi::CallbackInfo &info)
#define BITTW_STORE_ARGS                                                                           \
    BittwArgs a(info);                                                                             \
    bittw_store *box = a.store(0)
#define BITTW_RUN(BODY) bittw_queue(a, box, BittwJob::ENTER, [=](bitt_store * s, BittwOuts & o) BODY)
/* The same for a call that may wait (WAITS true). */
#define BITTW_RUN_WAITING(WAITS, BODY) bittw_queue(a, box, BittwJob::ENTER, [=](bitt_store * s, BittwOuts & o) BODY, WAITS)

BITTW_ASYNC(bittw_open)
{
    BittwArgs a(info);
    BittwOpt url = a.text(0, "url");
    return bittw_queue(a, NULL, BittwJob::NO_LOCK, [=](bitt_store *, BittwOuts &o) { return bittw_open(url.c(), o.box()); });
}
BITTW_ASYNC(bittw_close)
{
    BITTW_STORE_ARGS;
    return bittw_queue(a, box, BittwJob::NO_LOCK, [=](bitt_store *, BittwOuts &) {
        bittw_close(box);
        return 0;
    });
}
BITTW_ASYNC(bitt_store_migrate)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({ (void)o; return bitt_store_migrate(s); });
}
BITTW_ASYNC(bitt_clock_set_manual)
{
    BITTW_STORE_ARGS;
    int64_t now = a.i64(1, "now_ms");
    return BITTW_RUN({ (void)o; return bitt_clock_set_manual(s, now); });
}
BITTW_ASYNC(bitt_clock_advance)
{
    BITTW_STORE_ARGS;
    int64_t ms = a.i64(1, "ms");
    return BITTW_RUN({ (void)o; return bitt_clock_advance(s, ms); });
}
BITTW_ASYNC(bitt_clock_use_system)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({ (void)o; return bitt_clock_use_system(s); });
}
BITTW_ASYNC(bitt_clock_now)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({ return bitt_clock_now(s, o.i64()); });
}
BITTW_ASYNC(bitt_kv_get)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key");
    return BITTW_RUN({ return bitt_kv_get(s, k.data(), k.size(), o.entry()); });
}
BITTW_ASYNC(bitt_kv_take)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key");
    return BITTW_RUN({ return bitt_kv_take(s, k.data(), k.size(), o.entry()); });
}
BITTW_ASYNC(bitt_kv_set)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key"), v = a.bytes(2, "value");
    int kind = a.int_(3, "kind");
    int64_t ttl = a.i64(4, "ttl_ms");
    return BITTW_RUN({ return bitt_kv_set(s, k.data(), k.size(), v.data(), v.size(), kind, ttl, o.u64()); });
}
BITTW_ASYNC(bitt_kv_add)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key"), v = a.bytes(2, "value");
    int kind = a.int_(3, "kind");
    int64_t ttl = a.i64(4, "ttl_ms");
    return BITTW_RUN({ return bitt_kv_add(s, k.data(), k.size(), v.data(), v.size(), kind, ttl, o.u64()); });
}
BITTW_ASYNC(bitt_kv_delete)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key");
    return BITTW_RUN({ (void)o; return bitt_kv_delete(s, k.data(), k.size()); });
}
BITTW_ASYNC(bitt_kv_increment)
{
    BITTW_STORE_ARGS;
    std::string k = a.bytes(1, "key");
    int64_t delta = a.i64(2, "delta"), ttl = a.i64(3, "ttl_ms");
    return BITTW_RUN({
        int64_t *value = o.i64();
        return bitt_kv_increment(s, k.data(), k.size(), delta, ttl, value, o.u64());
    });
}
BITTW_ASYNC(bitt_kv_purge_expired)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({ return bitt_kv_purge_expired(s, o.u64()); });
}
BITTW_ASYNC(bittw_kv_get_many)
{
    BITTW_STORE_ARGS;
    std::vector<std::string> keys = a.keys(1);
    return BITTW_RUN({
        std::vector<const void *> p;
        std::vector<size_t> n;
        for (const std::string &k : keys) {
            p.push_back(k.data());
            n.push_back(k.size());
        }
        return bittw_kv_get_many(s, p.data(), n.data(), keys.size(), o.entries());
    });
}
BITTW_ASYNC(bittw_kv_list)
{
    BITTW_STORE_ARGS;
    BittwOpt prefix = a.opt_bytes(1, "prefix"), start = a.opt_bytes(2, "start"), end = a.opt_bytes(3, "end");
    uint32_t limit = a.u32(4, "limit");
    int reverse = a.int_(5, "reverse");
    BittwOpt cursor = a.text(6, "cursor");
    return BITTW_RUN({
        return bittw_kv_list(s, prefix.p(), prefix.n(), start.p(), start.n(), end.p(), end.n(), limit, reverse,
                             cursor.c(), o.entries());
    });
}
BITTW_ASYNC(bitt_txn_begin)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({
        (void)s;
        return bittw_txn_begin(box, o.txn());
    });
}
BITTW_ASYNC(bitt_txn_commit)
{
    BittwArgs a(info);
    bittw_txn *h = (bittw_txn *)a.handle(0, SWIGTYPE_p_bittw_txn, "transaction");
    if (a.ok() && !h->txn)
        return bittw_js_throw(a.env(), BITT_EUSAGE, "the transaction is closed"), Napi::Value();
    bittw_store *box = a.ok() ? h->box : NULL;
    return BITTW_RUN({
        (void)s;
        return bitt_txn_commit(h->txn, o.u64());
    });
}
BITTW_ASYNC(bittw_queue_enqueue)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    std::string payload = a.bytes(2, "payload");
    int kind = a.int_(3, "kind");
    int64_t delay = a.i64(4, "delay_ms");
    uint32_t max_attempts = a.u32(5, "max_attempts");
    BittwOpt dedup = a.opt_bytes(6, "dedup");
    return BITTW_RUN({
        return bittw_queue_enqueue(s, topic.c(), payload.data(), payload.size(), kind, delay, max_attempts, dedup.p(),
                                   dedup.n(), o.u64());
    });
}
BITTW_ASYNC(bittw_queue_dequeue)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint32_t limit = a.u32(2, "limit");
    int64_t lease = a.i64(3, "lease_ms"), wait = a.i64(4, "wait_ms");
    bittw_cancel_ptr cancel = a.cancel(5); /* optional: lib/cancel.js fires it */
    auto run = [=](bitt_store *s, BittwOuts &o) {
        return bittw_queue_dequeue_cancel(s, topic.c(), limit, lease, wait, cancel.get(), o.messages());
    };
    auto now = [=](bitt_store *s, BittwOuts &o) {
        return bittw_queue_dequeue_cancel(s, topic.c(), limit, lease, 0, cancel.get(), o.messages());
    };
    return bittw_queue(a, box, BittwJob::ENTER, run, wait > 0, wait > 0 ? BittwJob::Run(now) : nullptr);
}
BITTW_ASYNC(bitt_queue_ack)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    BittwOpt token = a.text(3, "token");
    return BITTW_RUN({ (void)o; return bitt_queue_ack(s, topic.c(), id, token.c()); });
}
BITTW_ASYNC(bitt_queue_ack_many)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    std::shared_ptr<bittw_deliveries> d = a.deliveries(2);
    return BITTW_RUN({
        size_t n = d->ids.size();
        int *st = o.ints(n);
        if (!st)
            return (int)BITT_ENOMEM;
        return bitt_queue_ack_many(s, topic.c(), d->ids.data(), d->tokens.data(), n, st, NULL);
    });
}
BITTW_ASYNC(bitt_queue_nack)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    BittwOpt token = a.text(3, "token"), error = a.text(4, "error");
    int64_t delay = a.i64(5, "delay_ms");
    return BITTW_RUN({ (void)o; return bitt_queue_nack(s, topic.c(), id, token.c(), error.c(), delay); });
}
/* A call on one delivery with a duration: (store, topic, id, token, ms). */
#define BITTW_ASYNC_DELIVERY_MS(NAME, MS)                                                           \
    BITTW_ASYNC(NAME)                                                                              \
    {                                                                                              \
        BITTW_STORE_ARGS;                                                                          \
        BittwOpt topic = a.text(1, "topic");                                                       \
        uint64_t id = a.u64(2, "id");                                                              \
        BittwOpt token = a.text(3, "token");                                                       \
        int64_t ms = a.i64(4, MS);                                                                 \
        return BITTW_RUN({ (void)o; return NAME(s, topic.c(), id, token.c(), ms); });              \
    }
BITTW_ASYNC_DELIVERY_MS(bitt_queue_extend, "lease_ms")
BITTW_ASYNC_DELIVERY_MS(bitt_queue_snooze, "delay_ms")
BITTW_ASYNC(bitt_queue_dead_list)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t after = a.u64(2, "after_id");
    uint32_t limit = a.u32(3, "limit");
    return BITTW_RUN({ return bitt_queue_dead_list(s, topic.c(), after, limit, o.messages()); });
}
BITTW_ASYNC(bitt_queue_dead_retry)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    return BITTW_RUN({ return bitt_queue_dead_retry(s, topic.c(), id, o.u64()); });
}
BITTW_ASYNC(bitt_queue_dead_delete)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    return BITTW_RUN({ return bitt_queue_dead_delete(s, topic.c(), id, o.u64()); });
}
BITTW_ASYNC(bittw_queue_stats)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    return BITTW_RUN({ return bittw_queue_stats(s, topic.c(), o.stats()); });
}
BITTW_ASYNC(bitt_lease_acquire)
{
    BITTW_STORE_ARGS;
    BittwOpt name = a.text(1, "name"), owner = a.text(2, "owner");
    int64_t ttl = a.i64(3, "ttl_ms");
    return BITTW_RUN({
        uint64_t *epoch = o.u64();
        return bitt_lease_acquire(s, name.c(), owner.c(), ttl, epoch, o.i64());
    });
}
BITTW_ASYNC(bitt_lease_renew)
{
    BITTW_STORE_ARGS;
    BittwOpt name = a.text(1, "name"), owner = a.text(2, "owner");
    uint64_t epoch = a.u64(3, "epoch");
    int64_t ttl = a.i64(4, "ttl_ms");
    return BITTW_RUN({ return bitt_lease_renew(s, name.c(), owner.c(), epoch, ttl, o.i64()); });
}
BITTW_ASYNC(bitt_lease_release)
{
    BITTW_STORE_ARGS;
    BittwOpt name = a.text(1, "name"), owner = a.text(2, "owner");
    uint64_t epoch = a.u64(3, "epoch");
    return BITTW_RUN({ (void)o; return bitt_lease_release(s, name.c(), owner.c(), epoch); });
}
BITTW_ASYNC(bitt_lease_get)
{
    BITTW_STORE_ARGS;
    BittwOpt name = a.text(1, "name");
    return BITTW_RUN({
        bitt_buf *owner = o.buf();
        uint64_t *epoch = o.u64();
        return bitt_lease_get(s, name.c(), owner, epoch, o.i64());
    });
}
BITTW_ASYNC(bitt_outbox_append)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    std::string ev = a.bytes(2, "event");
    int kind = a.int_(3, "kind");
    return BITTW_RUN({ return bitt_outbox_append(s, stream.c(), ev.data(), ev.size(), kind, o.u64()); });
}
BITTW_ASYNC(bitt_outbox_pending)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    uint32_t limit = a.u32(2, "limit");
    return BITTW_RUN({ return bitt_outbox_pending(s, stream.c(), limit, o.messages()); });
}
/* NULL is "no list", an empty list is given: a copied empty vector has no
 * storage, so it points at a dummy. */
static const uint64_t *bittw_seqs_ptr(const std::vector<uint64_t> &v, bool none)
{
    static const uint64_t empty = 0;
    return none ? NULL : v.empty() ? &empty : v.data();
}
#define BITTW_ASYNC_SEQS(NAME)                                                                      \
    BITTW_ASYNC(NAME)                                                                              \
    {                                                                                              \
        BITTW_STORE_ARGS;                                                                          \
        BittwOpt stream = a.text(1, "stream");                                                     \
        bool none = false;                                                                         \
        std::vector<uint64_t> seqs = a.seqs(2, &none);                                             \
        return BITTW_RUN({ return NAME(s, stream.c(), bittw_seqs_ptr(seqs, none), seqs.size(), o.u64()); }); \
    }
BITTW_ASYNC_SEQS(bitt_outbox_ack)
BITTW_ASYNC_SEQS(bitt_outbox_retry)
BITTW_ASYNC_SEQS(bitt_outbox_discard)
BITTW_ASYNC(bitt_outbox_fail)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    uint64_t seq = a.u64(2, "seq");
    BittwOpt error = a.text(3, "error");
    int64_t next = a.i64(4, "next_attempt_at");
    return BITTW_RUN({ (void)o; return bitt_outbox_fail(s, stream.c(), seq, error.c(), next); });
}
BITTW_ASYNC(bitt_outbox_park)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    uint64_t seq = a.u64(2, "seq");
    int reason = a.int_(3, "reason");
    BittwOpt error = a.text(4, "error");
    return BITTW_RUN({ (void)o; return bitt_outbox_park(s, stream.c(), seq, reason, error.c()); });
}
BITTW_ASYNC(bitt_outbox_parked)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    int reason = a.int_(2, "reason");
    uint32_t limit = a.u32(3, "limit");
    return BITTW_RUN({ return bitt_outbox_parked(s, stream.c(), reason, limit, o.messages()); });
}
BITTW_ASYNC(bitt_outbox_counts)
{
    BITTW_STORE_ARGS;
    BittwOpt stream = a.text(1, "stream");
    return BITTW_RUN({
        uint64_t *pending = o.u64();
        return bitt_outbox_counts(s, stream.c(), pending, o.u64());
    });
}
BITTW_ASYNC(bitt_pubsub_publish)
{
    BITTW_STORE_ARGS;
    BittwOpt channel = a.text(1, "channel");
    std::string data = a.bytes(2, "data");
    return BITTW_RUN({ (void)o; return bitt_pubsub_publish(s, channel.c(), data.data(), data.size()); });
}
BITTW_ASYNC(bitt_pubsub_subscribe)
{
    BITTW_STORE_ARGS;
    BittwOpt channel = a.text(1, "channel");
    return BITTW_RUN({
        (void)s;
        return bittw_pubsub_subscribe(box, channel.c(), o.sub());
    });
}
BITTW_ASYNC(bitt_pubsub_next)
{
    BittwArgs a(info);
    bittw_sub *h = (bittw_sub *)a.handle(0, SWIGTYPE_p_bittw_sub, "subscription");
    int64_t timeout = a.i64(1, "timeout_ms");
    bittw_cancel_ptr cancel = a.cancel(2); /* optional: lib/cancel.js fires it */
    if (a.ok() && !h->sub)
        return bittw_js_throw(a.env(), BITT_EUSAGE, "the subscription is closed"), Napi::Value();
    bittw_store *box = a.ok() ? h->box : NULL;
    return BITTW_RUN_WAITING(timeout > 0, {
        (void)s;
        return bitt_pubsub_next_cancel(h->sub, timeout, cancel.get(), o.message());
    });
}
BITTW_ASYNC(bitt_budget_take)
{
    BITTW_STORE_ARGS;
    BittwOpt name = a.text(1, "name");
    int64_t cap = a.i64(2, "capacity"), refill = a.i64(3, "refill"), period = a.i64(4, "period_ms"),
            n = a.i64(5, "n");
    return BITTW_RUN({ return bitt_budget_take(s, name.c(), cap, refill, period, n, o.i64()); });
}
BITTW_ASYNC(bitt_schedule_upsert)
{
    BITTW_STORE_ARGS;
    BittwOpt key = a.text(1, "key");
    int64_t interval = a.i64(2, "interval_ms");
    std::string payload = a.bytes(3, "payload");
    int kind = a.int_(4, "kind");
    int64_t first = a.i64(5, "first_run_at");
    return BITTW_RUN({
        (void)o;
        return bitt_schedule_upsert(s, key.c(), interval, payload.data(), payload.size(), kind, first);
    });
}
BITTW_ASYNC(bitt_schedule_claim)
{
    BITTW_STORE_ARGS;
    BittwOpt prefix = a.text(1, "prefix");
    return BITTW_RUN({ return bitt_schedule_claim(s, prefix.c(), o.schedule()); });
}
BITTW_ASYNC(bitt_schedule_get)
{
    BITTW_STORE_ARGS;
    BittwOpt key = a.text(1, "key");
    return BITTW_RUN({ return bitt_schedule_get(s, key.c(), o.schedule()); });
}
BITTW_ASYNC(bitt_schedule_delete)
{
    BITTW_STORE_ARGS;
    BittwOpt key = a.text(1, "key");
    return BITTW_RUN({ (void)o; return bitt_schedule_delete(s, key.c()); });
}
BITTW_ASYNC(bittw_schedule_list)
{
    BITTW_STORE_ARGS;
    return BITTW_RUN({
        BittwOuts::Item &it = o.add(BittwOuts::SCHEDULES);
        return bittw_schedule_list(s, (bitt_schedule ***)&it.p, &it.n);
    });
}

#endif

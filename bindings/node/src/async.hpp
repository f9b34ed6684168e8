/*
 * async.hpp: the Promise API. One AsyncWorker class runs one blocking C call
 * on the libuv pool and settles a Promise on the main thread; each exported
 * function only reads its JS arguments into owned copies (main thread) and
 * names the C call to make (a lambda). No semantics here: the C core
 * decides, the results take the shapes of js_values.hpp, the same as the
 * synchronous SWIG wrappers, and the JS layer (lib/) reads both alike.
 *
 * Lifetime: a call holds a reference on the store box (bittw_ref), so the
 * box outlives it; it takes the box's read lock on the worker thread for
 * the C call only, and the error message is read there, right after the
 * failing call (bitt_error_last() is per thread). close() runs on the pool
 * too: it takes the write lock, so it waits for the calls in flight, and
 * calls that start after it fail with "the store is closed".
 * Included into the SWIG wrapper (it uses SWIG's pointer conversions).
 */
#ifndef BITT_NODE_ASYNC_HPP
#define BITT_NODE_ASYNC_HPP

#include <deque>
#include <functional>
#include <string>
#include <vector>

/* ---- results filled on the worker thread -------------------------------------- */
class BittwOuts {
  public:
    uint64_t *u64() { return &add(U64).u; }
    int64_t *i64() { return &add(I64).i; }
    bitt_entry **entry() { return (bitt_entry **)&add(ENTRY).p; }
    bitt_entries **entries() { return (bitt_entries **)&add(ENTRIES).p; }
    bitt_message **message() { return (bitt_message **)&add(MESSAGE).p; }
    bitt_messages **messages() { return (bitt_messages **)&add(MESSAGES).p; }
    bitt_schedule **schedule() { return (bitt_schedule **)&add(SCHEDULE).p; }
    bitt_buf *buf() { return &add(BUF).b; }
    bitt_queue_stats *stats()
    {
        Item &it = add(STATS);
        it.st.version = BITT_QUEUE_STATS_VERSION;
        return &it.st;
    }
    bittw_txn **txn() { return (bittw_txn **)&add(TXN).p; }
    bittw_sub **sub() { return (bittw_sub **)&add(SUB).p; }
    bittw_store **box() { return (bittw_store **)&add(BOX).p; }

    /* [status, out...], or the status alone when there is no output (as
     * SWIG's wrappers give). */
    Napi::Value to_js(Napi::Env env, int status)
    {
        if (items_.empty())
            return Napi::Number::New(env, status);
        Napi::Array a = Napi::Array::New(env);
        uint32_t k = 0;
        a.Set(k++, Napi::Number::New(env, status));
        for (Item &it : items_) {
            switch (it.type) {
            case U64: a.Set(k++, bittw_js_u64(env, it.u)); break;
            case I64: a.Set(k++, bittw_js_i64(env, it.i)); break;
            case ENTRY: a.Set(k++, bittw_js_entry(env, (bitt_entry *)it.p)); break;
            case ENTRIES: {
                Napi::Array pair = bittw_js_entries(env, (bitt_entries *)it.p).As<Napi::Array>();
                a.Set(k++, pair.Get(0u));
                a.Set(k++, pair.Get(1u));
                break;
            }
            case MESSAGE: a.Set(k++, bittw_js_message(env, (bitt_message *)it.p)); break;
            case MESSAGES: a.Set(k++, bittw_js_messages(env, (bitt_messages *)it.p)); break;
            case SCHEDULE: a.Set(k++, bittw_js_schedule(env, (bitt_schedule *)it.p)); break;
            case SCHEDULES: a.Set(k++, bittw_js_schedules(env, (bitt_schedule **)it.p, it.n)); break;
            case BUF: a.Set(k++, it.b.ptr ? bittw_js_bytes(env, it.b.ptr, it.b.len) : env.Null()); break;
            case STATS: a.Set(k++, bittw_js_stats(env, &it.st)); break;
            case TXN: a.Set(k++, SWIG_NewPointerObj(it.p, SWIGTYPE_p_bittw_txn, 0)); it.p = NULL; break;
            case SUB: a.Set(k++, SWIG_NewPointerObj(it.p, SWIGTYPE_p_bittw_sub, 0)); it.p = NULL; break;
            case BOX: a.Set(k++, SWIG_NewPointerObj(it.p, SWIGTYPE_p_bittw_store, 0)); it.p = NULL; break;
            }
        }
        return a;
    }

    ~BittwOuts()
    {
        for (Item &it : items_) {
            switch (it.type) {
            case ENTRY: bitt_entry_free((bitt_entry *)it.p); break;
            case ENTRIES: bitt_entries_free((bitt_entries *)it.p); break;
            case MESSAGE: bitt_message_free((bitt_message *)it.p); break;
            case MESSAGES: bitt_messages_free((bitt_messages *)it.p); break;
            case SCHEDULE: bitt_schedule_free((bitt_schedule *)it.p); break;
            case SCHEDULES: bitt_schedule_list_free((bitt_schedule **)it.p, it.n); break;
            case BUF: bitt_buf_dispose(&it.b); break;
            /* handles not handed to JS (the call failed) */
            case TXN: bittw_txn_free((bittw_txn *)it.p); break;
            case SUB: bittw_pubsub_close((bittw_sub *)it.p); break;
            case BOX: bittw_free((bittw_store *)it.p); break;
            default: break;
            }
        }
    }

    enum Type { U64, I64, ENTRY, ENTRIES, MESSAGE, MESSAGES, SCHEDULE, SCHEDULES, BUF, STATS, TXN, SUB, BOX };
    struct Item {
        Type type;
        uint64_t u = 0;
        int64_t i = 0;
        void *p = nullptr;
        size_t n = 0;
        bitt_buf b = {NULL, 0, 0};
        bitt_queue_stats st = {};
    };
    Item &add(Type t)
    {
        items_.emplace_back();
        items_.back().type = t;
        return items_.back();
    }

  private:
    std::deque<Item> items_; /* stable addresses while the C call fills them */
};

/* ---- the one worker ----------------------------------------------------------- */
class BittwCall : public Napi::AsyncWorker {
  public:
    /* enter: hold the box's read lock for the call (every call but open and
     * close); the lambda gets the store in the box. */
    using Run = std::function<int(bitt_store *, BittwOuts &)>;
    enum Mode { ENTER, NO_LOCK };

    BittwCall(Napi::Env env, bittw_store *box, Mode mode, Run run)
        : Napi::AsyncWorker(env, "bitt"), box_(box), mode_(mode), run_(std::move(run)),
          deferred_(Napi::Promise::Deferred::New(env))
    {
        if (box_)
            bittw_ref(box_);
    }
    ~BittwCall() override { bittw_unref(box_); }

    Napi::Promise Promise() { return deferred_.Promise(); }

  protected:
    void Execute() override
    {
        if (mode_ == ENTER) {
            if (bittw_enter(box_) != 0) {
                status_ = BITT_EUSAGE;
                msg_ = "the store is closed";
                return;
            }
            status_ = run_(bittw_store_of(box_), outs_);
            read_error();
            bittw_leave(box_);
        } else {
            status_ = run_(NULL, outs_);
            read_error();
        }
    }
    void OnOK() override
    {
        Napi::Env env = Env();
        Napi::HandleScope scope(env);
        if (status_ < 0)
            deferred_.Reject(bittw_js_error(env, status_, msg_));
        else
            deferred_.Resolve(outs_.to_js(env, status_));
    }
    void OnError(const Napi::Error &e) override { deferred_.Reject(e.Value()); }

  private:
    void read_error()
    {
        if (status_ < 0) {
            const char *m = bitt_error_last();
            msg_ = m ? m : "";
        }
    }
    bittw_store *box_;
    Mode mode_;
    Run run_;
    Napi::Promise::Deferred deferred_;
    BittwOuts outs_;
    int status_ = 0;
    std::string msg_;
};

/* ---- arguments, copied on the main thread --------------------------------------- */
/* An optional byte string or text: NULL when not given. */
struct BittwOpt {
    std::string s;
    bool null = true;
    const void *p() const { return null ? NULL : s.data(); }
    size_t n() const { return null ? 0 : s.size(); }
    const char *c() const { return null ? NULL : s.c_str(); }
};

class BittwArgs {
  public:
    explicit BittwArgs(const Napi::CallbackInfo &info) : info_(info), env_(info.Env()) {}
    Napi::Env env() const { return env_; }
    bool ok() const { return ok_; }
    Napi::Value at(size_t i) const { return i < info_.Length() ? info_[i] : env_.Undefined(); }

    std::string bytes(size_t i, const char *what)
    {
        const uint8_t *p = NULL;
        size_t n = 0;
        if (ok_ && !bittw_js_get_bytes(env_, at(i), false, what, &p, &n))
            ok_ = false;
        return ok_ ? std::string((const char *)p, n) : std::string();
    }
    BittwOpt opt_bytes(size_t i, const char *what)
    {
        BittwOpt o;
        const uint8_t *p = NULL;
        size_t n = 0;
        if (ok_ && !bittw_js_get_bytes(env_, at(i), true, what, &p, &n))
            ok_ = false;
        if (ok_ && p) {
            o.s.assign((const char *)p, n);
            o.null = false;
        }
        return o;
    }
    BittwOpt text(size_t i, const char *what)
    {
        BittwOpt o;
        if (ok_ && !bittw_js_get_text(env_, at(i), true, what, &o.s, &o.null))
            ok_ = false;
        return o;
    }
    int64_t i64(size_t i, const char *what) { return read<int64_t>(i, what, bittw_js_get_i64); }
    uint64_t u64(size_t i, const char *what) { return read<uint64_t>(i, what, bittw_js_get_u64); }
    uint32_t u32(size_t i, const char *what) { return read<uint32_t>(i, what, bittw_js_get_u32); }
    int int_(size_t i, const char *what) { return read<int>(i, what, bittw_js_get_int); }
    /* seqs: an array, or null ("no list") */
    std::vector<uint64_t> seqs(size_t i, bool *is_null)
    {
        std::vector<uint64_t> v;
        if (ok_ && !bittw_js_get_u64s(env_, at(i), true, "seqs", &v, is_null))
            ok_ = false;
        return v;
    }
    std::vector<std::string> keys(size_t i)
    {
        std::vector<const void *> ptrs;
        std::vector<size_t> lens;
        std::vector<std::string> out;
        if (ok_ && !bittw_js_get_keys(env_, at(i), &ptrs, &lens))
            ok_ = false;
        for (size_t k = 0; ok_ && k < ptrs.size(); k++)
            out.emplace_back((const char *)ptrs[k], lens[k]);
        return out;
    }
    bittw_store *store(size_t i)
    {
        void *p = NULL;
        if (ok_ && (!SWIG_IsOK(SWIG_ConvertPtr(at(i), &p, SWIGTYPE_p_bittw_store, 0)) || !p)) {
            Napi::TypeError::New(env_, "expected a bitt store handle").ThrowAsJavaScriptException();
            ok_ = false;
        }
        return (bittw_store *)p;
    }
    /* A txn or subscription handle (null: "closed", a BittError). */
    void *handle(size_t i, swig_type_info *type, const char *what)
    {
        void *p = NULL;
        if (!ok_)
            return NULL;
        if (bittw_js_is_nullish(at(i))) {
            bittw_js_throw(env_, BITT_EUSAGE, std::string("the ") + what + " is closed");
            ok_ = false;
        } else if (!SWIG_IsOK(SWIG_ConvertPtr(at(i), &p, type, 0)) || !p) {
            Napi::TypeError::New(env_, std::string("expected a bitt ") + what).ThrowAsJavaScriptException();
            ok_ = false;
        }
        return p;
    }

  private:
    /* One number through its js_values.hpp reader; the first failure sticks. */
    template <typename T> T read(size_t i, const char *what, bool (*reader)(Napi::Env, Napi::Value, const char *, T *))
    {
        T v = 0;
        if (ok_ && !reader(env_, at(i), what, &v))
            ok_ = false;
        return v;
    }
    const Napi::CallbackInfo &info_;
    Napi::Env env_;
    bool ok_ = true;
};

/* Queues the call: a Promise, or undefined with a TypeError thrown when an
 * argument was wrong. */
static Napi::Value bittw_queue(BittwArgs &a, bittw_store *box, BittwCall::Mode mode, BittwCall::Run run)
{
    if (!a.ok())
        return Napi::Value();
    BittwCall *w = new BittwCall(a.env(), box, mode, std::move(run));
    Napi::Promise pr = w->Promise();
    w->Queue();
    return pr;
}

/* The store calls: (store, args...) -> Promise of [status, out...]. */
#define BITTW_ASYNC(NAME) static Napi::Value bittw_async_##NAME(const Napi::CallbackInfo &info)
#define BITTW_STORE_ARGS                                                                           \
    BittwArgs a(info);                                                                             \
    bittw_store *box = a.store(0)
#define BITTW_RUN(BODY) bittw_queue(a, box, BittwCall::ENTER, [=](bitt_store * s, BittwOuts & o) BODY)

BITTW_ASYNC(bittw_open)
{
    BittwArgs a(info);
    BittwOpt url = a.text(0, "url");
    return bittw_queue(a, NULL, BittwCall::NO_LOCK, [=](bitt_store *, BittwOuts &o) { return bittw_open(url.c(), o.box()); });
}
BITTW_ASYNC(bittw_close)
{
    BITTW_STORE_ARGS;
    return bittw_queue(a, box, BittwCall::NO_LOCK, [=](bitt_store *, BittwOuts &) {
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
    return BITTW_RUN({ return bittw_queue_dequeue(s, topic.c(), limit, lease, wait, o.messages()); });
}
BITTW_ASYNC(bitt_queue_ack)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    BittwOpt token = a.text(3, "token");
    return BITTW_RUN({ (void)o; return bitt_queue_ack(s, topic.c(), id, token.c()); });
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
BITTW_ASYNC(bitt_queue_extend)
{
    BITTW_STORE_ARGS;
    BittwOpt topic = a.text(1, "topic");
    uint64_t id = a.u64(2, "id");
    BittwOpt token = a.text(3, "token");
    int64_t lease = a.i64(4, "lease_ms");
    return BITTW_RUN({ (void)o; return bitt_queue_extend(s, topic.c(), id, token.c(), lease); });
}
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
    if (a.ok() && !h->sub)
        return bittw_js_throw(a.env(), BITT_EUSAGE, "the subscription is closed"), Napi::Value();
    bittw_store *box = a.ok() ? h->box : NULL;
    return BITTW_RUN({
        (void)s;
        return bitt_pubsub_next(h->sub, timeout, o.message());
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

/* ---- the tuple codec and the error factory (synchronous, no store) -------------- */
/* Parts: Buffer -> bytes, string -> string (UTF-8), bigint -> int,
 * number -> float, boolean -> bool, {string: Buffer} -> a string part
 * from raw bytes (to test refusals). */
static Napi::Value bittw_js_tuple_encode(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsArray()) {
        Napi::TypeError::New(env, "a tuple key must be an array").ThrowAsJavaScriptException();
        return Napi::Value();
    }
    Napi::Array parts = info[0].As<Napi::Array>();
    bittw_buf_out key;
    for (uint32_t i = 0; i < parts.Length(); i++) {
        Napi::Value p = parts.Get(i);
        int rc;
        const uint8_t *bp = NULL;
        size_t bn = 0;
        if (p.IsBoolean()) {
            rc = bitt_tuple_push_bool(&key.b, p.As<Napi::Boolean>().Value() ? 1 : 0);
        } else if (p.IsBigInt()) {
            int64_t v = 0;
            if (!bittw_js_get_i64(env, p, "a tuple int part", &v))
                return Napi::Value();
            rc = bitt_tuple_push_int(&key.b, v);
        } else if (p.IsNumber()) {
            rc = bitt_tuple_push_float(&key.b, p.As<Napi::Number>().DoubleValue());
        } else if (p.IsString()) {
            std::string u = p.As<Napi::String>().Utf8Value();
            rc = bitt_tuple_push_string(&key.b, u.data(), u.size());
        } else if (p.IsTypedArray() && p.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
            bittw_js_get_bytes(env, p, false, "a tuple part", &bp, &bn);
            rc = bitt_tuple_push_bytes(&key.b, bp, bn);
        } else if (p.IsObject() && p.As<Napi::Object>().Has("string")) {
            if (!bittw_js_get_bytes(env, p.As<Napi::Object>().Get("string"), false, "a raw string part", &bp, &bn))
                return Napi::Value();
            rc = bitt_tuple_push_string(&key.b, (const char *)bp, bn);
        } else {
            Napi::TypeError::New(env, "a tuple part must be a Buffer, string, bigint, number or boolean")
                .ThrowAsJavaScriptException();
            return Napi::Value();
        }
        if (rc < 0) {
            bittw_js_throw_last(env, rc);
            return Napi::Value();
        }
    }
    return bittw_js_bytes(env, key.b.ptr, key.b.len);
}

static Napi::Value bittw_js_tuple_decode(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    const uint8_t *kp = NULL;
    size_t kn = 0;
    if (!bittw_js_get_bytes(env, info.Length() ? info[0] : env.Undefined(), false, "key", &kp, &kn))
        return Napi::Value();
    Napi::Array out = Napi::Array::New(env);
    bittw_buf_out data;
    size_t off = 0;
    for (uint32_t i = 0;; i++) {
        int type = 0;
        int64_t iv = 0;
        double fv = 0;
        int rc = bitt_tuple_next(kp, kn, &off, &type, &data.b, &iv, &fv);
        if (rc == BITT_NOTFOUND)
            break;
        if (rc < 0) {
            bittw_js_throw_last(env, rc);
            return Napi::Value();
        }
        Napi::Value part;
        if (type == BITT_TUPLE_BYTES)
            part = bittw_js_bytes(env, data.b.ptr, data.b.len);
        else if (type == BITT_TUPLE_STRING)
            part = Napi::String::New(env, (const char *)(data.b.ptr ? data.b.ptr : (uint8_t *)""), data.b.len);
        else if (type == BITT_TUPLE_INT)
            part = Napi::BigInt::New(env, iv);
        else if (type == BITT_TUPLE_FLOAT)
            part = Napi::Number::New(env, fv);
        else
            part = Napi::Boolean::New(env, iv != 0);
        out.Set(i, part);
    }
    return out;
}

static void bittw_js_drop_factory(void *)
{
    delete bittw_js_error_factory;
    bittw_js_error_factory = nullptr;
}

static Napi::Value bittw_js_set_error_factory(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsFunction()) {
        Napi::TypeError::New(env, "expected a function").ThrowAsJavaScriptException();
        return Napi::Value();
    }
    if (!bittw_js_error_factory) {
        bittw_js_error_factory = new Napi::FunctionReference();
        napi_add_env_cleanup_hook(env, bittw_js_drop_factory, NULL);
    }
    *bittw_js_error_factory = Napi::Persistent(info[0].As<Napi::Function>());
    return env.Undefined();
}

static void bittw_js_register(Napi::Env env, Napi::Object exports)
{
    Napi::Object as = Napi::Object::New(env);
#define BITTW_REG(NAME) as.Set(#NAME, Napi::Function::New(env, bittw_async_##NAME, #NAME));
    BITTW_REG(bittw_open) BITTW_REG(bittw_close) BITTW_REG(bitt_store_migrate)
    BITTW_REG(bitt_clock_set_manual) BITTW_REG(bitt_clock_advance) BITTW_REG(bitt_clock_use_system)
    BITTW_REG(bitt_clock_now) BITTW_REG(bitt_kv_get) BITTW_REG(bitt_kv_take) BITTW_REG(bitt_kv_set)
    BITTW_REG(bitt_kv_add) BITTW_REG(bitt_kv_delete) BITTW_REG(bitt_kv_increment)
    BITTW_REG(bitt_kv_purge_expired) BITTW_REG(bittw_kv_get_many) BITTW_REG(bittw_kv_list)
    BITTW_REG(bitt_txn_begin) BITTW_REG(bitt_txn_commit) BITTW_REG(bittw_queue_enqueue)
    BITTW_REG(bittw_queue_dequeue) BITTW_REG(bitt_queue_ack) BITTW_REG(bitt_queue_nack)
    BITTW_REG(bitt_queue_extend) BITTW_REG(bitt_queue_dead_list) BITTW_REG(bitt_queue_dead_retry)
    BITTW_REG(bitt_queue_dead_delete) BITTW_REG(bittw_queue_stats) BITTW_REG(bitt_lease_acquire)
    BITTW_REG(bitt_lease_renew) BITTW_REG(bitt_lease_release) BITTW_REG(bitt_lease_get)
    BITTW_REG(bitt_outbox_append) BITTW_REG(bitt_outbox_pending) BITTW_REG(bitt_outbox_ack)
    BITTW_REG(bitt_outbox_retry) BITTW_REG(bitt_outbox_discard) BITTW_REG(bitt_outbox_fail)
    BITTW_REG(bitt_outbox_park) BITTW_REG(bitt_outbox_parked) BITTW_REG(bitt_outbox_counts)
    BITTW_REG(bitt_pubsub_publish) BITTW_REG(bitt_pubsub_subscribe) BITTW_REG(bitt_pubsub_next)
    BITTW_REG(bitt_budget_take) BITTW_REG(bitt_schedule_upsert) BITTW_REG(bitt_schedule_claim)
    BITTW_REG(bitt_schedule_get) BITTW_REG(bitt_schedule_delete) BITTW_REG(bittw_schedule_list)
#undef BITTW_REG
    exports.Set("async", as);
    exports.Set("bittw_tuple_encode", Napi::Function::New(env, bittw_js_tuple_encode, "bittw_tuple_encode"));
    exports.Set("bittw_tuple_decode", Napi::Function::New(env, bittw_js_tuple_decode, "bittw_tuple_decode"));
    exports.Set("bittw_set_error_factory", Napi::Function::New(env, bittw_js_set_error_factory, "bittw_set_error_factory"));
}
#endif

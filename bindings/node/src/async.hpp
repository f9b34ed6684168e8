/*
 * async.hpp: the Promise API. A job (BittwJob) runs one blocking C call off
 * the main thread and settles a Promise on it: on the binding's dispatcher
 * (BittwDispatch, dispatch.hpp), or, for the calls that wait, on its wait
 * threads (BittwWaitPool), so that waits never fill the dispatcher; each exported
 * function only reads its JS arguments into owned copies (main thread) and
 * names the C call to make (a lambda). No semantics here: the C core
 * decides, the results take the shapes of js_values.hpp, the same as the
 * synchronous SWIG wrappers, and the JS layer (lib/) reads both alike.
 *
 * Lifetime: a call holds a reference on the store box (bittw_ref), so the
 * box outlives it; it takes the box's read lock on the worker thread for
 * the C call only, and the error message is read there, right after the
 * failing call (bitt_error_last() is per thread). close() runs on the dispatcher
 * too: it takes the write lock, so it waits for the calls in flight, and
 * calls that start after it fail with "the store is closed".
 * Included into the SWIG wrapper (it uses SWIG's pointer conversions).
 */
#ifndef BITT_NODE_ASYNC_HPP
#define BITT_NODE_ASYNC_HPP

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_set>
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
    /* n ints (ack_many's statuses); NULL when out of memory. */
    int *ints(size_t n)
    {
        Item &it = add(INTS);
        it.p = calloc(n + 1, sizeof(int));
        it.n = n;
        return (int *)it.p;
    }

    /* [status, out...], or the status alone when there is no output (as
     * SWIG's wrappers give). */
    Napi::Value to_js(Napi::Env env, int status)
    {
        if (n_ == 0)
            return Napi::Number::New(env, status);
        Napi::Array a = Napi::Array::New(env);
        uint32_t k = 0;
        a.Set(k++, Napi::Number::New(env, status));
        for (size_t j = 0; j < n_; j++) {
            Item &it = items_[j];
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
            case BOX: a.Set(k++, bittw_js_new_store(env, (bittw_store *)it.p)); it.p = NULL; break;
            case INTS: a.Set(k++, bittw_js_ints(env, (const int *)it.p, it.n)); break;
            }
        }
        return a;
    }

    ~BittwOuts() { clear(); }

    /* One list of messages, empty: a dequeue that found nothing. */
    bool found_nothing() const
    {
        return n_ == 1 && items_[0].type == MESSAGES && (!items_[0].p || bitt_messages_count((bitt_messages *)items_[0].p) == 0);
    }

    void clear()
    {
        for (size_t j = 0; j < n_; j++) {
            Item &it = items_[j];
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
            case INTS: free(it.p); break;
            default: break;
            }
            it = Item();
        }
        n_ = 0;
    }

    enum Type { U64, I64, ENTRY, ENTRIES, MESSAGE, MESSAGES, SCHEDULE, SCHEDULES, BUF, STATS, TXN, SUB, BOX, INTS };
    struct Item {
        Type type;
        uint64_t u = 0;
        int64_t i = 0;
        void *p = nullptr;
        size_t n = 0;
        bitt_buf b = {NULL, 0, 0};
        bitt_queue_stats st = {};
    };
    /* At most 3 outputs per C call (lease_get): kept in place, so that a
     * call allocates nothing for its results; addresses stay put while the
     * C call fills them. */
    Item &add(Type t)
    {
        if (n_ == MAX)
            abort(); /* a call with more outputs: raise MAX */
        Item &it = items_[n_++];
        it.type = t;
        return it;
    }

  private:
    static const size_t MAX = 3;
    Item items_[MAX];
    size_t n_ = 0;
};

class BittwChan;

/* ---- one call: what it runs and how it settles ---------------------------------- */
class BittwJob {
  public:
    /* enter: hold the box's read lock for the call (every call but open and
     * close); the lambda gets the store in the box. */
    using Run = std::function<int(bitt_store *, BittwOuts &)>;
    enum Mode { ENTER, NO_LOCK };

    BittwJob(Napi::Env env, bittw_store *box, Mode mode, Run run)
        : box_(box), mode_(mode), run_(std::move(run)), deferred_(Napi::Promise::Deferred::New(env))
    {
        if (box_)
            bittw_ref(box_);
    }
    ~BittwJob() { bittw_unref(box_); }

    Napi::Promise Promise() { return deferred_.Promise(); }
    BittwChan *chan = nullptr; /* where it settles (dispatch.hpp) */

    /* Off the main thread: the C call, and its error message read right
     * after it on the same thread. */
    void Work()
    {
        if (mode_ == ENTER) {
            if (bittw_enter(box_) != 0) {
                status_ = BITT_EUSAGE;
                msg_ = "the store is closed";
                return;
            }
            call(bittw_store_of(box_));
            bittw_leave(box_);
        } else {
            call(NULL);
        }
    }

    /* The call to make instead when this one (the same without waiting)
     * finds nothing: Continue() switches to it. */
    void ThenWait(Run waiting) { waiting_ = std::move(waiting); }

    /* After Work: true when the call found nothing and has a waiting form,
     * which is now the call to run (on a wait thread). */
    bool Continue()
    {
        if (!waiting_ || status_ != 0 || !outs_.found_nothing())
            return false;
        UseWaiting();
        outs_.clear();
        return true;
    }

    /* The waiting form becomes the call to run (before any Work). */
    void UseWaiting()
    {
        run_ = std::move(waiting_);
        waiting_ = nullptr;
    }

    /* A call that could not run (out of memory in the binding). */
    void Fail(int status, const char *msg)
    {
        status_ = status;
        msg_ = msg;
    }

    /* On the main thread. */
    void Settle(Napi::Env env)
    {
        Napi::HandleScope scope(env);
        if (status_ < 0)
            deferred_.Reject(bittw_js_error(env, status_, msg_));
        else
            deferred_.Resolve(outs_.to_js(env, status_));
    }

  private:
    void call(bitt_store *s)
    {
        try {
            status_ = run_(s, outs_);
            read_error();
        } catch (const std::bad_alloc &) {
            Fail(BITT_ENOMEM, "bitt: out of memory in the binding");
        } catch (...) {
            /* nothing may unwind out of a worker thread or a fiber */
            Fail(BITT_EBACKEND, "bitt: the binding could not run the call");
        }
    }
    void read_error()
    {
        if (status_ < 0) {
            const char *m = bitt_error_last();
            msg_ = m ? m : "";
        }
    }
    bittw_store *box_;
    Mode mode_;
    Run run_, waiting_;
    Napi::Promise::Deferred deferred_;
    BittwOuts outs_;
    int status_ = 0;
    std::string msg_;
};

#include "dispatch.hpp"

/* ---- calls that wait (dequeue with wait, subscription next): their own threads ------ */
/* A call that waits would hold one of the dispatcher's few threads (8 by
 * default) for its whole wait, and the store's other calls (enqueue, ack)
 * would queue behind it. These run on a separate pool that grows by one
 * thread whenever no idle thread is free, so a wait never delays another
 * call; a thread idle for 30 s ends. The pool is process-wide and never
 * destroyed (its threads are detached); each call settles on its own
 * environment's thread through its channel (dispatch.hpp). (A thread-safe
 * function per call, as before, was freed with a terminated worker thread's
 * environment while its wait still ran: the wait's end then aborted the
 * process.) */
class BittwWaitPool {
  public:
    static BittwWaitPool &get()
    {
        static BittwWaitPool *pool = new BittwWaitPool(); /* never freed: threads outlive exit */
        return *pool;
    }

    /* Runs the job, then settles it through its environment's channel
     * (dispatch.hpp), which also frees it if the environment is gone by
     * then (a worker thread terminated during a wait); false if it cannot
     * run (the caller still owns the job). */
    bool submit(Napi::Env env, BittwJob *job)
    {
        BittwChan *c = BittwChan::of(env);
        if (!c)
            return false;
        job->chan = c;
        {
            std::lock_guard<std::mutex> g(lock_);
            if (queue_.size() >= idle_) {
                try {
                    std::thread(&BittwWaitPool::loop, this).detach();
                    threads_++;
                } catch (const std::system_error &) {
                    if (threads_ == 0)
                        return false;
                }
            }
            queue_.push_back(job);
            wake_.notify_one();
        }
        c->hold(env);
        return true;
    }

  private:
    void loop()
    {
        std::unique_lock<std::mutex> lk(lock_);
        for (;;) {
            idle_++;
            bool got = wake_.wait_for(lk, std::chrono::seconds(30), [this] { return !queue_.empty(); });
            idle_--;
            if (!got) {
                threads_--;
                return;
            }
            BittwJob *job = queue_.front();
            queue_.pop_front();
            lk.unlock();
            job->Work();
            job->chan->finish(job);
            lk.lock();
        }
    }

    std::mutex lock_;
    std::condition_variable wake_;
    std::deque<BittwJob *> queue_;
    size_t idle_ = 0, threads_ = 0;
};

#include "fibers.hpp"

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
    int32_t i32(size_t i, const char *what) { return read<int32_t>(i, what, bittw_js_get_i32); }
    /* names (a dequeue's topics), copied */
    std::shared_ptr<std::vector<std::string>> texts(size_t i, const char *what)
    {
        auto v = std::make_shared<std::vector<std::string>>();
        if (ok_ && !bittw_js_get_texts(env_, at(i), what, v.get()))
            ok_ = false;
        return v;
    }
    /* A cancel token (js_values.hpp), or none when null/undefined. */
    bittw_cancel_ptr cancel(size_t i)
    {
        bittw_cancel_ptr c;
        if (ok_ && !bittw_js_get_cancel(env_, at(i), &c))
            ok_ = false;
        return c;
    }
    /* ack_many's deliveries: [id, token] pairs */
    std::shared_ptr<bittw_deliveries> deliveries(size_t i)
    {
        auto d = std::make_shared<bittw_deliveries>();
        if (ok_ && !bittw_js_get_deliveries(env_, at(i), d.get()))
            ok_ = false;
        return d;
    }
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
        bittw_store *p = ok_ ? bittw_js_store(env_, at(i)) : NULL;
        if (ok_ && !p) {
            Napi::TypeError::New(env_, "expected a bitt store handle").ThrowAsJavaScriptException();
            ok_ = false;
        }
        return p;
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

#include "async_ops.hpp"
#include "async_queue.hpp"
#include "extras.hpp"
#endif

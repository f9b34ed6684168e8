/*
 * dispatch.hpp: where the Promise API's prompt calls run: the binding's own
 * worker threads instead of the libuv pool. Why not the pool: it has 4
 * threads by default (shared with fs, dns, zlib), so at most 4 bitt calls
 * run side by side, and each call costs a napi_async_work made and deleted.
 * Here one process-wide queue feeds up to BITT_NODE_THREADS threads (8 by
 * default), and each environment (the main thread, every worker thread) has
 * one completion channel: a list of finished jobs and one thread-safe
 * function, called only when the list turns non-empty, so one event-loop
 * wake-up settles every call that finished meanwhile. Idle workers sleep at
 * once: a spin before sleeping was measured (bench/node/README.md) and on a
 * 2-core machine it took the core the event loop needs (an awaited memory
 * get ~20 us -> ~50 us with a 30 us spin, at twice the CPU).
 *
 * Lifetime: a channel lives while its environment does and while a job of
 * it is in flight (a reference count). When the environment is torn down
 * (worker.terminate(), process exit) its thread-safe function is finalized:
 * the channel is marked dead, so the jobs that finish afterwards are freed
 * on their worker thread, unsettled (their promises are gone). The channel
 * keeps the event loop alive only while it has calls in flight (ref/unref),
 * as the libuv pool's work items did. Threads are detached and the queue is
 * never freed: threads may outlive exit(). Included by async.hpp.
 */
#ifndef BITT_NODE_DISPATCH_HPP
#define BITT_NODE_DISPATCH_HPP

#include <atomic>
#include <cstdlib>

class BittwChan {
  public:
    /* This environment's channel, made at its first call (NULL if Node-API
     * refused). One per thread: an environment has a thread of its own. */
    static BittwChan *of(Napi::Env env)
    {
        if (cur_)
            return cur_;
        BittwChan *c = new BittwChan();
        Napi::String name = Napi::String::New(env, "bitt");
        if (napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, c, finalize, c, drain, &c->tsfn_) !=
            napi_ok) {
            delete c;
            return nullptr;
        }
        napi_unref_threadsafe_function(env, c->tsfn_);
        cur_ = c;
        return c;
    }

    /* On the environment's thread, as a job is queued: the loop stays alive
     * while calls are in flight. */
    void hold(Napi::Env env)
    {
        refs_.fetch_add(1, std::memory_order_relaxed);
        if (pending_++ == 0)
            napi_ref_threadsafe_function(env, tsfn_);
    }

    /* On a worker thread, once the job ran: queued for settling, or freed
     * if the environment is gone. */
    void finish(BittwJob *job)
    {
        std::unique_lock<std::mutex> g(lock_);
        if (dead_) {
            g.unlock();
            delete job;
            unref();
            return;
        }
        done_.push_back(job);
        /* Under the lock: finalize() marks the channel dead under it too, so
         * the thread-safe function is still alive here. */
        if (done_.size() == 1)
            napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
    }

  private:
    BittwChan() = default;
    ~BittwChan() = default;

    void unref()
    {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

    /* On the environment's thread: settles every finished job, then runs
     * their promise reactions. */
    static void drain(napi_env env, napi_value, void *context, void *)
    {
        BittwChan *c = (BittwChan *)context;
        if (!env)
            return; /* torn down: finalize() frees what is left */
        std::vector<BittwJob *> jobs;
        {
            std::lock_guard<std::mutex> g(c->lock_);
            jobs.swap(c->done_);
        }
        if (jobs.empty())
            return;
        /* Node-API runs this in a callback scope of the thread-safe
         * function's: the promise reactions run as it returns. Raw
         * Node-API calls where one may fail (a worker thread being
         * terminated): a C++ exception must not leave this callback. */
        napi_handle_scope hs = nullptr;
        bool js = napi_open_handle_scope(env, &hs) == napi_ok;
        napi_value first_error = nullptr;
        for (BittwJob *job : jobs) {
            if (js) {
                try {
                    job->Settle(Napi::Env(env));
                } catch (const Napi::Error &err) {
                    if (!first_error)
                        first_error = err.Value();
                } catch (...) {
                }
            }
            delete job;
            c->unref();
        }
        c->pending_ -= jobs.size();
        if (c->pending_ == 0)
            napi_unref_threadsafe_function(env, c->tsfn_);
        if (first_error)
            napi_throw(env, first_error);
        if (js)
            napi_close_handle_scope(env, hs);
    }

    /* The environment is torn down (or its thread-safe function closed). */
    static void finalize(napi_env, void *data, void *)
    {
        BittwChan *c = (BittwChan *)data;
        std::vector<BittwJob *> jobs;
        {
            std::lock_guard<std::mutex> g(c->lock_);
            c->dead_ = true;
            jobs.swap(c->done_);
        }
        for (BittwJob *job : jobs) {
            delete job;
            c->unref();
        }
        if (cur_ == c)
            cur_ = nullptr;
        c->unref(); /* the environment's reference */
    }

    static thread_local BittwChan *cur_;
    std::mutex lock_;
    std::vector<BittwJob *> done_;
    bool dead_ = false;
    napi_threadsafe_function tsfn_ = nullptr;
    std::atomic<size_t> refs_{1}; /* the environment's, plus one per job in flight */
    size_t pending_ = 0;          /* jobs in flight; the environment's thread only */
};
thread_local BittwChan *BittwChan::cur_ = nullptr;

class BittwDispatch {
  public:
    static BittwDispatch &get()
    {
        static BittwDispatch *d = new BittwDispatch(); /* never freed: threads outlive exit */
        return *d;
    }

    /* Queues the job (on its environment's thread); false if it cannot run
     * (the caller still owns it). */
    bool submit(Napi::Env env, BittwJob *job)
    {
        BittwChan *c = BittwChan::of(env);
        if (!c)
            return false;
        job->chan = c;
        {
            std::lock_guard<std::mutex> g(lock_);
            /* Every idle thread has a job already: one more thread. */
            if (queue_.size() >= sleeping_ && threads_ < max_threads_)
                spawn();
            if (threads_ == 0)
                return false;
            queue_.push_back(job);
            if (sleeping_ > 0)
                wake_.notify_one();
        }
        c->hold(env);
        return true;
    }

  private:
    BittwDispatch()
    {
        max_threads_ = env_size("BITT_NODE_THREADS", 8, 1, 256);
    }

    static size_t env_size(const char *name, size_t dflt, size_t lo, size_t hi)
    {
        const char *v = getenv(name);
        if (!v || !*v)
            return dflt;
        char *end = NULL;
        unsigned long n = strtoul(v, &end, 10);
        return (*end || n < lo || n > hi) ? dflt : (size_t)n;
    }

    /* Under lock_. */
    void spawn()
    {
        try {
            std::thread(&BittwDispatch::loop, this).detach();
            threads_++;
        } catch (const std::system_error &) {
            /* the threads there are take the job */
        }
    }

    /* Under lk (held): the next job, or NULL after 30 s idle (the thread
     * then ends). */
    BittwJob *next(std::unique_lock<std::mutex> &lk)
    {
        if (queue_.empty()) {
            sleeping_++;
            bool got = wake_.wait_for(lk, std::chrono::seconds(30), [this] { return !queue_.empty(); });
            sleeping_--;
            if (!got)
                return nullptr;
        }
        BittwJob *job = queue_.front();
        queue_.pop_front();
        /* Jobs left: wake one more. */
        if (!queue_.empty() && sleeping_ > 0)
            wake_.notify_one();
        return job;
    }

    void loop()
    {
        std::unique_lock<std::mutex> lk(lock_);
        for (;;) {
            BittwJob *job = next(lk);
            if (!job) {
                threads_--;
                return;
            }
            lk.unlock();
            job->Work();
            job->chan->finish(job);
            lk.lock();
        }
    }

    std::mutex lock_;
    std::condition_variable wake_;
    std::deque<BittwJob *> queue_;
    size_t threads_ = 0, sleeping_ = 0;
    size_t max_threads_ = 8;
};

#endif

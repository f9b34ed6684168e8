/*
 * fibers.hpp: Promise calls on a network store run on fibers of the event
 * loop's own thread, not on the dispatcher's threads (dispatch.hpp).
 *
 * Why: a call handed to a thread pays two hand-offs (event loop -> worker
 * -> event loop), each a futex wake and a context switch, more than the
 * Redis round trip itself; ioredis waits on its socket in the event loop
 * and pays neither. Here the call starts at once on a fiber (a small stack
 * of its own); where the core would block on its socket it calls the
 * thread's wait hook (core/io_wait.h), which parks the fiber on a uv_poll
 * and a uv_timer and returns to the event loop. When the socket is ready
 * (or the deadline passes) the loop resumes the fiber, and when the call
 * ends its Promise settles in the same callback (a call that ends without
 * waiting settles in the loop's next check phase: settle_later). Fibers of
 * one thread share a Redis connection (core/redis/pipe.c), so calls in
 * flight pipeline.
 *
 * Only C code runs on a fiber: the job's C call (BittwJob::Work); every
 * Node-API call stays on the thread's own stack. Which calls: those of a
 * store whose backend has io_slots (core: bitt_backend_ops), at most that
 * many at once per store, never open/close, and never a wait itself
 * (subscriptions, a dequeue's wait: wait threads); a dequeue with a wait
 * first runs here without waiting (async_ops.hpp). BITT_NODE_FIBERS=0
 * turns it off (every call on the dispatcher, as before).
 *
 * Spinning: a wait for a reply that may come back soon (the core passes
 * the connection's spin state, core/io_spin.c) does not spin on the fiber:
 * JavaScript may start more calls in this turn. A uv_prepare handle runs
 * when the loop is about to poll; when the loop has nothing else to do
 * (loop_would_sleep) it spins on those sockets and the loop's own
 * descriptor for up to the connection's window, so the loop finds the reply
 * ready instead of sleeping and being woken (~50 us on a virtual machine).
 *
 * Lifetime: one scheduler per environment's thread (thread_local), made at
 * its first fiber call; when the environment is torn down its cleanup hook
 * fails every suspended wait (-1), so the C calls unwind and give back
 * their connections, and their jobs are freed unsettled.
 */
#ifndef BITT_NODE_FIBERS_HPP
#define BITT_NODE_FIBERS_HPP

#include <poll.h>
#include <uv.h>
#if UV_VERSION_MAJOR != 1
#error "fibers.hpp reads uv_loop_t fields laid out as in libuv 1.x"
#endif

#include <unordered_map>

extern "C" {
#include "io_wait.h"
size_t bitt__store_io_slots(bitt_store *store);
int64_t bitt__monotonic_ms(void);
}
#include "fiber_switch.hpp"

class BittwFibers;

struct BittwFiber {
    BittwCtx ctx;
    bitt__fiber_stack stack = {}; /* a guard page below it */
    BittwJob *job = nullptr;
    bittw_store *box = nullptr;
    BittwFibers *owner = nullptr;
    uv_timer_t timer;
    int fd = -1;
    short events = 0;
    bitt__io_spin *spin = nullptr; /* a wait for a reply that may come soon */
    int64_t spun_from = 0;         /* a spin for it missed: when it began (ns) */
    bool waiting = false, done = false;
    int result = 0;
};

/* The fibers waiting on one descriptor, behind one uv_poll. */
struct BittwFdWatch {
    uv_poll_t poll;
    int fd = -1;
    int uv_events = 0;
    std::vector<BittwFiber *> waiters;
    BittwFibers *owner = nullptr;
};

class BittwFibers {
  public:
    /* This thread's scheduler (NULL when off or unavailable). */
    static BittwFibers *of(Napi::Env env)
    {
        if (cur_)
            return cur_->closing_ ? nullptr : cur_;
        static const bool off = [] {
            const char *v = getenv("BITT_NODE_FIBERS");
            return v && !strcmp(v, "0");
        }();
        if (off)
            return nullptr;
        uv_loop_t *loop = nullptr;
        if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop)
            return nullptr;
        BittwFibers *s = new BittwFibers(env, loop);
        if (!s->ok_) {
            delete s;
            return nullptr;
        }
        cur_ = s;
        if (uv_prepare_init(loop, &s->prepare_) == 0) {
            s->has_prepare_ = true;
            s->prepare_.data = s;
            uv_unref((uv_handle_t *)&s->prepare_); /* keeps no loop alive */
            uv_prepare_start(&s->prepare_, on_prepare);
        }
        if (uv_check_init(loop, &s->later_) == 0) {
            if (uv_idle_init(loop, &s->later_idle_) == 0) {
                s->has_later_ = true;
                s->later_.data = s;
            } else {
                uv_close((uv_handle_t *)&s->later_, nullptr);
            }
        }
        bitt__io_hook_set(&s->hook_);
        napi_add_env_cleanup_hook(env, cleanup, s);
        return s;
    }

    /* Runs the job on a fiber (it may settle before this returns): false
     * when it cannot (the store has no io_slots, or they are all taken):
     * the caller queues it elsewhere. */
    bool run(Napi::Env env, bittw_store *box, BittwJob *job)
    {
        size_t slots = 0;
        if (bittw_enter(box) == 0) {
            slots = bitt__store_io_slots(bittw_store_of(box));
            bittw_leave(box);
        }
        auto it = inflight_.find(box);
        size_t busy = it == inflight_.end() ? 0 : it->second;
        if (busy >= slots)
            return false;
        BittwFiber *f = take_fiber();
        if (!f)
            return false;
        inflight_[box] = busy + 1;
        f->job = job;
        f->box = box;
        f->done = false;
        bittw_ctx_init(&f->ctx, f->stack.base, f->stack.size, entry);
        resume(f);
        drain();
        settle_later(env);
        return true;
    }

  private:
    BittwFibers(Napi::Env env, uv_loop_t *loop) : env_(env), loop_(loop)
    {
        hook_.wait = hook_wait;
        hook_.self = hook_self;
        hook_.wake = hook_wake;
        hook_.others_ready = hook_others_ready;
        hook_.wait_spin = hook_wait_spin;
        hook_.ctx = this;
        napi_value name = nullptr, resource = nullptr;
        ok_ = napi_create_string_utf8(env, "bitt", NAPI_AUTO_LENGTH, &name) == napi_ok &&
              napi_create_object(env, &resource) == napi_ok &&
              napi_async_init(env, resource, name, &async_) == napi_ok &&
              napi_create_reference(env, resource, 1, &resource_) == napi_ok;
    }

    static const size_t STACK = 256 * 1024;

    BittwFiber *take_fiber()
    {
        if (!spare_.empty()) {
            BittwFiber *f = spare_.back();
            spare_.pop_back();
            return f;
        }
        BittwFiber *f = new (std::nothrow) BittwFiber();
        if (!f)
            return nullptr;
        if (bitt__fiber_stack_new(&f->stack, STACK) != 0 || uv_timer_init(loop_, &f->timer) != 0) {
            bitt__fiber_stack_free(&f->stack);
            delete f;
            return nullptr;
        }
        f->timer.data = f;
        f->owner = this;
        all_.push_back(f);
        return f;
    }

    /* The fiber's body: one job, then back to the loop for good. */
    static void entry()
    {
        BittwFibers *s = cur_;
        BittwFiber *f = s->running_;
        f->job->Work(); /* catches what its C++ may throw */
        f->done = true;
        bittw_ctx_switch(&f->ctx, &s->main_);
        abort(); /* a finished fiber is never resumed */
    }

    void resume(BittwFiber *f)
    {
        running_ = f;
        bittw_ctx_switch(&main_, &f->ctx);
        running_ = nullptr;
        if (f->done)
            finished_.push_back(f);
    }

    /* Resumes every fiber made ready meanwhile (their C calls may ready
     * more: a reader hands replies to others). */
    void drain()
    {
        if (draining_)
            return;
        draining_ = true;
        while (!ready_.empty()) {
            BittwFiber *f = ready_.front();
            ready_.pop_front();
            resume(f);
        }
        draining_ = false;
    }

    void make_ready(BittwFiber *f, int result)
    {
        if (!f->waiting)
            return;
        f->waiting = false;
        f->result = result;
        ready_.push_back(f);
    }

    /* Settles finished jobs. From a libuv callback (in_loop) inside a
     * callback scope, so that their promise reactions run when it closes;
     * from a JS call the caller's own scope does that. */
    void settle(Napi::Env env, bool in_loop)
    {
        if (finished_.empty())
            return;
        std::vector<BittwFiber *> done;
        done.swap(finished_);
        napi_handle_scope hs = nullptr;
        napi_callback_scope cs = nullptr;
        bool js = !closing_ && napi_open_handle_scope(env, &hs) == napi_ok;
        if (js && in_loop) {
            napi_value resource = nullptr;
            if (napi_get_reference_value(env, resource_, &resource) != napi_ok ||
                napi_open_callback_scope(env, resource, async_, &cs) != napi_ok)
                cs = nullptr;
        }
        for (BittwFiber *f : done) {
            /* found nothing: the waiting form of the call goes to a wait thread */
            if (js && f->job->Continue()) {
                if (BittwWaitPool::get().submit(env, f->job)) {
                    release(f);
                    continue;
                }
                f->job->Fail(BITT_ENOMEM, "bitt: no thread could be started for the wait");
            }
            if (js) {
                try {
                    f->job->Settle(env);
                } catch (...) {
                }
            }
            delete f->job;
            release(f);
        }
        if (cs)
            napi_close_callback_scope(env, cs);
        if (hs)
            napi_close_handle_scope(env, hs);
    }

    /* Jobs that finished inside the JS call that started them (their reply
     * was there before the fiber would have parked: on a busy machine the
     * server often runs on the caller's CPU the moment the command is
     * written) settle in this turn's check phase, not at once: else a loop
     * of awaited calls would never let the event loop run (timers, I/O,
     * immediates), where a reply that comes through the loop always does.
     * The idle handle keeps the loop from sleeping until then. */
    void settle_later(Napi::Env env)
    {
        if (finished_.empty())
            return;
        if (!has_later_) {
            settle(env, false);
            return;
        }
        if (!uv_is_active((uv_handle_t *)&later_)) {
            uv_check_start(&later_, on_later);
            uv_idle_start(&later_idle_, [](uv_idle_t *) {});
        }
    }

    static void on_later(uv_check_t *h)
    {
        BittwFibers *s = (BittwFibers *)h->data;
        uv_check_stop(&s->later_);
        uv_idle_stop(&s->later_idle_);
        s->from_loop();
    }

    void release(BittwFiber *f)
    {
        auto it = inflight_.find(f->box);
        if (it != inflight_.end() && --it->second == 0)
            inflight_.erase(it);
        f->job = nullptr;
        f->box = nullptr;
        spare_.push_back(f);
    }

    /* ---- the hook (core/io_wait.h), called on a fiber ---------------------------- */
    static void *hook_self(void *ctx) { return ((BittwFibers *)ctx)->running_; }

    /* Other calls of this thread are in flight: more are likely to start
     * in this turn of the loop, so a Redis set waits for them to join it
     * in one script call (core/redis/set_group.c). */
    static int hook_others_ready(void *ctx)
    {
        size_t n = 0;
        for (const auto &it : ((BittwFibers *)ctx)->inflight_)
            n += it.second;
        return n > 1;
    }

    static void hook_wake(void *ctx, void *fiber) { ((BittwFibers *)ctx)->make_ready((BittwFiber *)fiber, 1); }

    static int hook_wait(void *ctx, int fd, short events, int64_t deadline)
    {
        BittwFibers *s = (BittwFibers *)ctx;
        BittwFiber *f = s->running_;
        if (s->closing_)
            return -1;
        int64_t left = deadline - bitt__monotonic_ms();
        if (left < 0)
            left = 0;
        f->fd = fd;
        f->events = events;
        if (fd >= 0 && !s->watch(f))
            return -1;
        uv_timer_start(&f->timer, on_timer, (uint64_t)left, 0);
        f->waiting = true;
        bittw_ctx_switch(&f->ctx, &s->main_);
        /* resumed: ready, woken, timed out, or torn down */
        uv_timer_stop(&f->timer);
        if (fd >= 0)
            s->unwatch(f);
        return f->result;
    }

    static int hook_wait_spin(void *ctx, int fd, short events, int64_t deadline,
                              bitt__io_spin *spin)
    {
        BittwFiber *f = ((BittwFibers *)ctx)->running_;
        f->spin = spin;
        f->spun_from = 0;
        int rc = hook_wait(ctx, fd, events, deadline);
        bitt__io_spin_missed(spin, f->spun_from, rc == 1); /* after a missed spin */
        f->spin = nullptr;
        return rc;
    }

    static int uv_events_of(short events)
    {
        return ((events & POLLIN) ? UV_READABLE : 0) | ((events & POLLOUT) ? UV_WRITABLE : 0);
    }

    bool watch(BittwFiber *f)
    {
        BittwFdWatch *&w = fds_[f->fd];
        if (!w) {
            w = new (std::nothrow) BittwFdWatch();
            if (!w || uv_poll_init(loop_, &w->poll, f->fd) != 0) {
                delete w;
                fds_.erase(f->fd);
                return false;
            }
            w->fd = f->fd;
            w->owner = this;
            w->poll.data = w;
        }
        w->waiters.push_back(f);
        return restart(w);
    }

    void unwatch(BittwFiber *f)
    {
        auto it = fds_.find(f->fd);
        if (it == fds_.end())
            return;
        BittwFdWatch *w = it->second;
        for (size_t i = 0; i < w->waiters.size(); i++)
            if (w->waiters[i] == f) {
                w->waiters.erase(w->waiters.begin() + i);
                break;
            }
        if (w->waiters.empty()) {
            /* The core may close the descriptor next: libuv must forget it
             * now (uv_poll_stop removes it from epoll at once). */
            fds_.erase(it);
            uv_poll_stop(&w->poll);
            uv_close((uv_handle_t *)&w->poll, [](uv_handle_t *h) { delete (BittwFdWatch *)h->data; });
        } else {
            restart(w);
        }
    }

    bool restart(BittwFdWatch *w)
    {
        int ev = 0;
        for (BittwFiber *f : w->waiters)
            ev |= uv_events_of(f->events);
        if (ev == w->uv_events)
            return true;
        w->uv_events = ev;
        return uv_poll_start(&w->poll, ev, on_poll) == 0;
    }

    /* ---- libuv callbacks: on the thread's own stack ---------------------------------- */
    static void on_poll(uv_poll_t *h, int status, int events)
    {
        BittwFdWatch *w = (BittwFdWatch *)h->data;
        BittwFibers *s = w->owner;
        std::vector<BittwFiber *> hit;
        for (BittwFiber *f : w->waiters)
            if (status < 0 || (uv_events_of(f->events) & events))
                hit.push_back(f);
        for (BittwFiber *f : hit)
            s->make_ready(f, status < 0 ? -1 : 1);
        s->from_loop();
    }

    static bool queue_empty(const void *q) { return *(void *const *)q == q; }

    /* Whether the loop, about to poll, would sleep: what uv_backend_timeout
     * checks, but for the watcher queue (it answers 0 whenever a watcher
     * changed since the last poll, as ours just did) and the timers (a
     * spin delays one due now by at most its window, 200 us by default,
     * against their 1 ms resolution). Reads fields of uv_loop_t that uv.h declares, fixed
     * across libuv 1.x (its ABI promise). */
    static bool loop_would_sleep(const uv_loop_t *l)
    {
        return l->stop_flag == 0 && queue_empty(&l->pending_queue) &&
               queue_empty(&l->idle_handles) && l->closing_handles == nullptr;
    }

    /* The loop is about to poll: spin first when it would sleep while a
     * reply is expected soon (see the top of this file). */
    static void on_prepare(uv_prepare_t *h)
    {
        BittwFibers *s = (BittwFibers *)h->data;
        if (s->closing_ || s->fds_.empty() || !loop_would_sleep(s->loop_))
            return;
        struct pollfd pfd[9];
        bitt__io_spin *spins[8];
        BittwFiber *waiting[8];
        size_t n = 0;
        for (const auto &it : s->fds_)
            for (BittwFiber *f : it.second->waiters) {
                if (!f->spin || f->spun_from || !(f->events & POLLIN) || n == 8)
                    continue;
                waiting[n] = f;
                spins[n] = f->spin;
                pfd[n++] = {f->fd, POLLIN, 0};
            }
        if (!n)
            return;
        pfd[n] = {uv_backend_fd(s->loop_), POLLIN, 0}; /* any other I/O of the loop */
        int64_t from;
        bitt__io_spin_several(spins, n, pfd, n + 1, &from);
        for (size_t i = 0; i < n; i++)
            if (spins[i]) /* missed: the wait's end tells how late */
                waiting[i]->spun_from = from;
    }

    static void on_timer(uv_timer_t *t)
    {
        BittwFiber *f = (BittwFiber *)t->data;
        f->owner->make_ready(f, 0);
        f->owner->from_loop();
    }

    void from_loop()
    {
        drain();
        settle(env_, true);
    }

    /* The environment is going: every wait fails, so each C call unwinds
     * (its connection is given back, broken), and its job is dropped. */
    static void cleanup(void *arg)
    {
        BittwFibers *s = (BittwFibers *)arg;
        s->closing_ = true;
        for (BittwFiber *f : s->all_)
            s->make_ready(f, -1);
        s->drain();
        s->settle(s->env_, false);
        bitt__io_hook_set(nullptr);
        if (cur_ == s)
            cur_ = nullptr;
        if (s->has_prepare_) {
            uv_prepare_stop(&s->prepare_);
            uv_close((uv_handle_t *)&s->prepare_, nullptr);
        }
        if (s->has_later_) {
            uv_close((uv_handle_t *)&s->later_, nullptr);
            uv_close((uv_handle_t *)&s->later_idle_, nullptr);
        }
        for (BittwFiber *f : s->spare_) {
            bitt__fiber_stack_free(&f->stack);
            uv_close((uv_handle_t *)&f->timer, [](uv_handle_t *h) { delete (BittwFiber *)h->data; });
        }
        s->spare_.clear();
        napi_async_destroy(s->env_, s->async_);
        napi_delete_reference(s->env_, s->resource_);
        /* the scheduler itself stays: a poll handle may still be closing */
    }

    static thread_local BittwFibers *cur_;
    Napi::Env env_;
    uv_loop_t *loop_;
    bitt__io_hook hook_ = {};
    napi_async_context async_ = nullptr;
    napi_ref resource_ = nullptr;
    bool ok_ = false, closing_ = false, draining_ = false, has_prepare_ = false, has_later_ = false;
    uv_prepare_t prepare_;
    uv_check_t later_; /* settle_later */
    uv_idle_t later_idle_;
    BittwCtx main_;
    BittwFiber *running_ = nullptr;
    std::deque<BittwFiber *> ready_;
    std::vector<BittwFiber *> finished_, spare_, all_; /* all_: every fiber made */
    std::unordered_map<int, BittwFdWatch *> fds_;
    std::unordered_map<bittw_store *, size_t> inflight_;
};
thread_local BittwFibers *BittwFibers::cur_ = nullptr;

#endif

/*
 * fast.hpp: the synchronous Store's hottest calls, KV get and set of one
 * key, as Node-API functions of their own (lib/fast.js calls them), for
 * what a SWIG wrapper costs around a microsecond call on SQLite or memory:
 * the [status, out] array, the entry object made by calling back into JS,
 * a new ArrayBuffer for every value. No semantics here either: the C call
 * is the same (bitt_kv_get, bitt_kv_set), as are the argument checks and
 * errors (js_values.hpp, the same messages as the SWIG wrappers') and the
 * store box's read lock.
 *
 * Results go through memory lib/fast.js made and hands over:
 * a small head, where a get writes the entry's kind, expiresAt, version and
 * where its value went, and a set the new version; and a pool, where a get
 * copies a value of up to 4 KiB, as Node's Buffer.from does with its own
 * pool: lib/fast.js makes the value's Buffer a slice of it (no ArrayBuffer
 * per value) and hands over a new pool when this one runs low. A get
 * returns only the value's length (or, for a longer value, a Buffer of its
 * own; null: not found), and JS makes the entry object. The pools are
 * marked untransferable, as Node's are, so that no slice handed out can
 * detach one under us.
 */
#ifndef BITT_NODE_FAST_HPP
#define BITT_NODE_FAST_HPP

#include <algorithm>
#include <string>

/* The head's layout; lib/fast.js reads it with the same offsets. */
struct bittw_fast_head {
    uint64_t version;
    double kind;
    double expires_at; /* ms; past 2^53 rounded, as lib/model.js would */
    double offset;     /* of the value in the pool */
    double low;        /* 1: the pool has less than bittw_fast_value_max left */
    double pad;
};
static const size_t bittw_fast_value_max = 4096; /* longer: a Buffer of its own */

/* The head and pool of one copy of lib/fast.js, the data of the functions
 * bittw_fast_bind made for it: a second copy (a test runner's fresh module
 * registry, which still shares the addon) gets functions and memory of its
 * own. Freed with the environment. */
struct bittw_fast_mem {
    Napi::Reference<Napi::ArrayBuffer> head_ref, pool_ref;
    bittw_fast_head *head = nullptr;
    uint8_t *pool = nullptr;
    size_t pool_size = 0, used = 0;
};

static void bittw_fast_drop(void *m)
{
    delete (bittw_fast_mem *)m;
}

static bittw_fast_mem *bittw_fast_of(const Napi::CallbackInfo &info)
{
    return (bittw_fast_mem *)info.Data();
}

/* An ArrayBuffer argument of at least min bytes, or an empty one after throwing. */
static Napi::ArrayBuffer bittw_fast_buffer_arg(const Napi::CallbackInfo &info, size_t min)
{
    if (info.Length() < 1 || !info[0].IsArrayBuffer() ||
        info[0].As<Napi::ArrayBuffer>().ByteLength() < min) {
        Napi::TypeError::New(info.Env(), "expected an ArrayBuffer of at least " +
                                             std::to_string(min) + " bytes")
            .ThrowAsJavaScriptException();
        return Napi::ArrayBuffer();
    }
    return info[0].As<Napi::ArrayBuffer>();
}

/* bittw_fast_pool(pool): the values of the next gets go there. */
static Napi::Value bittw_fast_pool(const Napi::CallbackInfo &info)
{
    Napi::ArrayBuffer ab = bittw_fast_buffer_arg(info, bittw_fast_value_max);
    if (ab.IsEmpty())
        return Napi::Value();
    bittw_fast_mem *m = bittw_fast_of(info);
    m->pool_ref = Napi::Persistent(ab);
    m->pool = (uint8_t *)ab.Data();
    m->pool_size = ab.ByteLength();
    m->used = 0;
    m->head->low = 0;
    return info.Env().Undefined();
}

/* The store box of info[0], its read lock held by *hold; false after
 * throwing (as the SWIG wrappers' typemap). */
static bool bittw_fast_enter(Napi::Env env, Napi::Value v, bittw_hold *hold)
{
    bittw_store *box = bittw_js_store(env, v);
    if (!box) {
        Napi::TypeError::New(env, "expected a bitt store handle").ThrowAsJavaScriptException();
        return false;
    }
    return bittw_js_enter(env, box, hold);
}

static bool bittw_fast_ready(Napi::Env env, bittw_fast_mem *m)
{
    if (m->pool)
        return true;
    bittw_js_throw(env, BITT_EUSAGE, "no pool was given");
    return false;
}

/* bittw_kv_get1(store, key): null (not found), the value's length (the
 * value in the pool, at the head's offset), or the value as a Buffer
 * (longer than 4 KiB, or no room left); kind, version and expiresAt in the
 * head. */
static Napi::Value bittw_kv_get1(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    bittw_hold hold;
    const uint8_t *kp = NULL;
    size_t kn = 0;
    bittw_fast_mem *m = bittw_fast_of(info);
    if (!bittw_fast_ready(env, m) || !bittw_fast_enter(env, info[0], &hold) ||
        !bittw_js_get_bytes(env, info[1], false, "key", &kp, &kn))
        return Napi::Value();
    bittw_owned<bitt_entry, bitt_entry_free> e;
    int rc = bitt_kv_get(bittw_store_of(hold.box), kp, kn, &e.p);
    if (rc < 0) {
        bittw_js_throw_last(env, rc);
        return Napi::Value();
    }
    if (!e.p)
        return env.Null();
    bittw_fast_head *h = m->head;
    h->version = bitt_entry_version(e.p);
    h->kind = bitt_entry_kind(e.p);
    h->expires_at = (double)bitt_entry_expires_at(e.p);
    size_t vl = 0;
    const uint8_t *v = bitt_entry_value(e.p, &vl);
    if (vl > bittw_fast_value_max || vl > m->pool_size - m->used)
        return bittw_js_bytes(env, v, vl);
    if (vl)
        memcpy(m->pool + m->used, v, vl);
    h->offset = (double)m->used;
    m->used =
        std::min(m->pool_size, (m->used + vl + 7) & ~(size_t)7); /* 8-aligned, as Node's pool */
    if (m->pool_size - m->used < bittw_fast_value_max)
        h->low = 1;
    return Napi::Number::New(env, (double)vl);
}

/* bittw_kv_set1(store, key, value, kind, ttl): the new version in the
 * head; returns undefined. */
static Napi::Value bittw_kv_set1(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    bittw_hold hold;
    const uint8_t *kp = NULL, *vp = NULL;
    size_t kn = 0, vn = 0;
    int kind = 0;
    int64_t ttl = 0;
    bittw_fast_mem *m = bittw_fast_of(info);
    if (!bittw_fast_ready(env, m) || !bittw_fast_enter(env, info[0], &hold) ||
        !bittw_js_get_bytes(env, info[1], false, "key", &kp, &kn) ||
        !bittw_js_get_bytes(env, info[2], false, "value", &vp, &vn) ||
        !bittw_js_get_int(env, info[3], "kind", &kind) ||
        !bittw_js_get_i64(env, info[4], "ttl_ms", &ttl))
        return Napi::Value();
    uint64_t version = 0;
    int rc = bitt_kv_set(bittw_store_of(hold.box), kp, kn, vp, vn, kind, ttl, &version);
    if (rc < 0) {
        bittw_js_throw_last(env, rc);
        return Napi::Value();
    }
    m->head->version = version;
    return env.Undefined();
}

/* bittw_fast_bind(head): {pool, get, set} (bittw_fast_pool, bittw_kv_get1,
 * bittw_kv_set1) on memory of their own, with this head. */
static Napi::Value bittw_fast_bind(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    Napi::ArrayBuffer ab = bittw_fast_buffer_arg(info, sizeof(bittw_fast_head));
    if (ab.IsEmpty())
        return Napi::Value();
    bittw_fast_mem *m = new bittw_fast_mem();
    napi_add_env_cleanup_hook(env, bittw_fast_drop, m);
    m->head_ref = Napi::Persistent(ab);
    m->head = (bittw_fast_head *)ab.Data();
    Napi::Object fns = Napi::Object::New(env);
    fns.Set("pool", Napi::Function::New(env, bittw_fast_pool, "bittw_fast_pool", m));
    fns.Set("get", Napi::Function::New(env, bittw_kv_get1, "bittw_kv_get1", m));
    fns.Set("set", Napi::Function::New(env, bittw_kv_set1, "bittw_kv_set1", m));
    return fns;
}

static void bittw_fast_register(Napi::Env env, Napi::Object exports)
{
    exports.Set("bittw_fast_bind", Napi::Function::New(env, bittw_fast_bind, "bittw_fast_bind"));
}

#endif

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
 * Results go through a scratch ArrayBuffer that lib/fast.js made and
 * hands over once per thread (bittw_fast_init): an entry's kind,
 * expiresAt and version are written into its head, and a value that fits
 * into its tail too, so that a get returns only the value's length (or,
 * for a longer value, a Buffer of its own; null: not found) and JS makes
 * the entry object and the value's Buffer (Node's pooled allocation, no
 * ArrayBuffer per value). A set writes the new version there. The scratch
 * never leaves lib/fast.js, so nothing else can detach or keep it.
 */
#ifndef BITT_NODE_FAST_HPP
#define BITT_NODE_FAST_HPP

/* The scratch's layout; lib/fast.js reads it with the same offsets. */
struct bittw_fast_head {
    uint64_t version;
    double kind;
    double expires_at; /* ms; past 2^53 rounded, as lib/model.js would */
    double pad;
};
static const size_t bittw_fast_value_max = 4096; /* bytes after the head */

/* This thread's scratch (one Node environment a thread, as the factories
 * of js_values.hpp). */
static thread_local Napi::Reference<Napi::ArrayBuffer> *bittw_fast_ref = nullptr;
static thread_local uint8_t *bittw_fast_mem = nullptr;

static void bittw_fast_drop(void *)
{
    delete bittw_fast_ref;
    bittw_fast_ref = nullptr;
    bittw_fast_mem = nullptr;
}

/* bittw_fast_init(arrayBuffer): keeps the scratch (head + value bytes). */
static Napi::Value bittw_fast_init(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsArrayBuffer() ||
        info[0].As<Napi::ArrayBuffer>().ByteLength() != sizeof(bittw_fast_head) + bittw_fast_value_max) {
        Napi::TypeError::New(env, "expected the scratch ArrayBuffer").ThrowAsJavaScriptException();
        return Napi::Value();
    }
    if (!bittw_fast_ref) {
        bittw_fast_ref = new Napi::Reference<Napi::ArrayBuffer>();
        napi_add_env_cleanup_hook(env, bittw_fast_drop, NULL);
    }
    Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
    *bittw_fast_ref = Napi::Persistent(ab);
    bittw_fast_mem = (uint8_t *)ab.Data();
    return env.Undefined();
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

static bool bittw_fast_ready(Napi::Env env)
{
    if (bittw_fast_mem)
        return true;
    bittw_js_throw(env, BITT_EUSAGE, "bittw_fast_init was not called on this thread");
    return false;
}

/* bittw_kv_get1(store, key): null (not found), the value's length (the
 * value in the scratch), or the value as a Buffer (longer than the
 * scratch); kind, version and expiresAt in the scratch's head. */
static Napi::Value bittw_kv_get1(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    bittw_hold hold;
    const uint8_t *kp = NULL;
    size_t kn = 0;
    if (!bittw_fast_ready(env) || !bittw_fast_enter(env, info[0], &hold) ||
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
    bittw_fast_head *h = (bittw_fast_head *)bittw_fast_mem;
    h->version = bitt_entry_version(e.p);
    h->kind = bitt_entry_kind(e.p);
    h->expires_at = (double)bitt_entry_expires_at(e.p);
    size_t vl = 0;
    const uint8_t *v = bitt_entry_value(e.p, &vl);
    if (vl > bittw_fast_value_max)
        return bittw_js_bytes(env, v, vl);
    if (vl)
        memcpy(bittw_fast_mem + sizeof *h, v, vl);
    return Napi::Number::New(env, (double)vl);
}

/* bittw_kv_set1(store, key, value, kind, ttl): the new version in the
 * scratch's head; returns undefined. */
static Napi::Value bittw_kv_set1(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    bittw_hold hold;
    const uint8_t *kp = NULL, *vp = NULL;
    size_t kn = 0, vn = 0;
    int kind = 0;
    int64_t ttl = 0;
    if (!bittw_fast_ready(env) || !bittw_fast_enter(env, info[0], &hold) ||
        !bittw_js_get_bytes(env, info[1], false, "key", &kp, &kn) ||
        !bittw_js_get_bytes(env, info[2], false, "value", &vp, &vn) ||
        !bittw_js_get_int(env, info[3], "kind", &kind) || !bittw_js_get_i64(env, info[4], "ttl_ms", &ttl))
        return Napi::Value();
    uint64_t version = 0;
    int rc = bitt_kv_set(bittw_store_of(hold.box), kp, kn, vp, vn, kind, ttl, &version);
    if (rc < 0) {
        bittw_js_throw_last(env, rc);
        return Napi::Value();
    }
    ((bittw_fast_head *)bittw_fast_mem)->version = version;
    return env.Undefined();
}

static void bittw_fast_register(Napi::Env env, Napi::Object exports)
{
    exports.Set("bittw_fast_init", Napi::Function::New(env, bittw_fast_init, "bittw_fast_init"));
    exports.Set("bittw_kv_get1", Napi::Function::New(env, bittw_kv_get1, "bittw_kv_get1"));
    exports.Set("bittw_kv_set1", Napi::Function::New(env, bittw_kv_set1, "bittw_kv_set1"));
}

#endif

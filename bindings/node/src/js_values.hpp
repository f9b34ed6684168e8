/*
 * js_values.hpp: JavaScript values to C arguments and C results to
 * JavaScript values, shared by the SWIG wrappers (synchronous calls) and the
 * AsyncWorker calls (async.hpp), so that both hand the JS layer the same
 * shapes. Included into the SWIG wrapper (Node-API with C++ exceptions):
 * every reader returns false after throwing: a TypeError for a value of the
 * wrong type, InvalidArgument for an integer the C type cannot hold (the
 * messages of bindings/ERRORS.md).
 *
 * Shapes (as the Python binding's tuples, with 64-bit numbers as BigInt):
 *   entry    {key, value, kind, version, expiresAt (number; bigint past 2^53)}
 *   message  [id, topic, payload, kind, token, attempts, maxAttempts,
 *             lastError, createdAt, dueAt, failedAt, parkReason, state,
 *             priority, doneAt, result (null: none), resultKind (-1: none)]
 *   schedule [key, interval, payload, kind, nextRunAt, occurrence, cron,
 *             topic (null: none), messageId]
 *   stats    [pending, delayed, processing, dead, oldestPendingAt, done]
 */
#ifndef BITT_NODE_JS_VALUES_HPP
#define BITT_NODE_JS_VALUES_HPP

#include <cmath>
#include <memory>
#include <string>
#include <vector>

/* ---- errors ---------------------------------------------------------------- */
/* The JS layer's error factory (code, message) -> BittError. One per thread:
 * each Node environment (main thread, every worker thread) runs on its own
 * thread and registers its own. */
static thread_local Napi::FunctionReference *bittw_js_error_factory = nullptr;

static Napi::Value bittw_js_error(Napi::Env env, int code, const std::string &msg)
{
    std::string m = msg.empty() ? std::string(bitt_strerror(code)) : msg;
    if (bittw_js_error_factory) {
        Napi::Value e = bittw_js_error_factory->Call({Napi::Number::New(env, code), Napi::String::New(env, m)});
        if (!e.IsEmpty())
            return e;
    }
    Napi::Error e = Napi::Error::New(env, m);
    e.Set("code", Napi::Number::New(env, code));
    return e.Value();
}

static void bittw_js_throw(Napi::Env env, int code, const std::string &msg)
{
    Napi::Value e = bittw_js_error(env, code, msg);
    if (!env.IsExceptionPending())
        napi_throw(env, e);
}

/* Reads the per-thread last error: call it right after the failing call. */
static void bittw_js_throw_last(Napi::Env env, int code)
{
    const char *m = bitt_error_last();
    bittw_js_throw(env, code, m ? m : "");
}

/* The type of v as the messages name it (the JS layer's lib/args.js
 * typeName does the same): "undefined", "string", "an array", "Date"... */
static std::string bittw_js_type_name(Napi::Env env, Napi::Value v)
{
    switch (v.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return "boolean";
    case napi_number: return "number";
    case napi_string: return "string";
    case napi_symbol: return "symbol";
    case napi_bigint: return "bigint";
    case napi_function: return "function";
    case napi_external: return "an external";
    default: break;
    }
    if (v.IsArray())
        return "an array";
    try {
        Napi::Value c = v.As<Napi::Object>().Get("constructor");
        if (c.IsFunction()) {
            std::string n = c.As<Napi::Object>().Get("name").ToString().Utf8Value();
            if (!n.empty() && n != "Object")
                return n;
        }
    } catch (const Napi::Error &) {
        /* a getter that throws: the plain name */
    }
    return "an object";
}

/* TypeError "<what>: <type of v> is not <want>" (bindings/ERRORS.md). */
static bool bittw_js_type_error(Napi::Env env, const char *what, const char *want, Napi::Value v)
{
    std::string type = bittw_js_type_name(env, v);
    if (env.IsExceptionPending())
        return false;
    Napi::TypeError::New(env, std::string(what) + ": " + type + " is not " + want).ThrowAsJavaScriptException();
    return false;
}

/* InvalidArgument "<what>: integer <v> is outside the <range> range" (ERRORS.md):
 * an integer the C call cannot take. */
static bool bittw_js_range_error(Napi::Env env, const char *what, Napi::Value v, const char *range)
{
    std::string text = v.ToString().Utf8Value();
    bittw_js_throw(env, BITT_EINVAL, std::string(what) + ": integer " + text + " is outside the " + range + " range");
    return false;
}

/* TypeError for a number that is not an integer: "<what>: number 1.5 is not an integer". */
static bool bittw_js_not_integer(Napi::Env env, const char *what, Napi::Value v, const char *want)
{
    if (!v.IsNumber())
        return bittw_js_type_error(env, what, want, v);
    Napi::TypeError::New(env, std::string(what) + ": number " + v.ToString().Utf8Value() + " is not " + want)
        .ThrowAsJavaScriptException();
    return false;
}

/* ---- values in --------------------------------------------------------------- */
static bool bittw_js_is_nullish(Napi::Value v)
{
    return v.IsNull() || v.IsUndefined();
}

/* A byte string: Buffer or Uint8Array (borrowed, valid during the call);
 * null/undefined gives NULL when allowed. */
static bool bittw_js_get_bytes(Napi::Env env, Napi::Value v, bool allow_null, const char *what,
                               const uint8_t **p, size_t *n)
{
    *p = NULL;
    *n = 0;
    if (allow_null && bittw_js_is_nullish(v))
        return true;
    /* One Node-API call for the usual case (anything not a typed array
     * fails it): these are on every key and value of the hot paths. */
    napi_typedarray_type type;
    void *data = NULL;
    if (napi_get_typedarray_info(env, v, &type, n, &data, NULL, NULL) == napi_ok && type == napi_uint8_array) {
        *p = data ? (const uint8_t *)data : (const uint8_t *)"";
        return true;
    }
    *n = 0;
    return bittw_js_type_error(env, what, allow_null ? "a Buffer, a Uint8Array or null" : "a Buffer or a Uint8Array", v);
}

/* A name or text: a string (UTF-8) or a byte string without NUL; null gives
 * "no text" when allowed. */
static bool bittw_js_get_text(Napi::Env env, Napi::Value v, bool allow_null, const char *what,
                              std::string *out, bool *is_null)
{
    *is_null = false;
    out->clear();
    if (allow_null && bittw_js_is_nullish(v)) {
        *is_null = true;
        return true;
    }
    if (v.IsString()) {
        *out = v.As<Napi::String>().Utf8Value();
    } else if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
        Napi::Uint8Array u = v.As<Napi::Uint8Array>();
        out->assign((const char *)u.Data(), u.ByteLength());
    } else {
        return bittw_js_type_error(env, what, allow_null ? "a string, a Buffer or null" : "a string or a Buffer", v);
    }
    if (out->find('\0') != std::string::npos) {
        bittw_js_throw(env, BITT_EINVAL, std::string(what) + " must not contain a NUL character");
        return false;
    }
    return true;
}

/* Integers: a BigInt, or a Number holding an integer. Out of the C type's
 * range: InvalidArgument; not an integer: TypeError. */
static bool bittw_js_get_i64(Napi::Env env, Napi::Value v, const char *what, int64_t *out)
{
    if (v.IsBigInt()) {
        bool lossless = false;
        *out = v.As<Napi::BigInt>().Int64Value(&lossless);
        return lossless || bittw_js_range_error(env, what, v, "int64");
    }
    if (v.IsNumber()) {
        double d = v.As<Napi::Number>().DoubleValue();
        if (std::isfinite(d) && std::floor(d) == d) {
            if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
                *out = (int64_t)d;
                return true;
            }
            return bittw_js_range_error(env, what, v, "int64");
        }
    }
    return bittw_js_not_integer(env, what, v, "an integer (a number or a bigint)");
}

/* An unsigned integer; range names the C type in the error. */
static bool bittw_js_get_unsigned(Napi::Env env, Napi::Value v, const char *what, uint64_t *out, const char *range)
{
    if (v.IsBigInt()) {
        bool lossless = false;
        *out = v.As<Napi::BigInt>().Uint64Value(&lossless);
        return lossless || bittw_js_range_error(env, what, v, range);
    }
    if (v.IsNumber()) {
        double d = v.As<Napi::Number>().DoubleValue();
        if (std::isfinite(d) && std::floor(d) == d) {
            if (d >= 0 && d < 18446744073709551616.0) {
                *out = (uint64_t)d;
                return true;
            }
            return bittw_js_range_error(env, what, v, range);
        }
    }
    return bittw_js_not_integer(env, what, v, "a non-negative integer (a number or a bigint)");
}

static bool bittw_js_get_u64(Napi::Env env, Napi::Value v, const char *what, uint64_t *out)
{
    return bittw_js_get_unsigned(env, v, what, out, "uint64");
}

static bool bittw_js_get_u32(Napi::Env env, Napi::Value v, const char *what, uint32_t *out)
{
    uint64_t u = 0;
    if (!bittw_js_get_unsigned(env, v, what, &u, "uint32"))
        return false;
    if (u > 0xffffffffULL)
        return bittw_js_range_error(env, what, v, "uint32");
    *out = (uint32_t)u;
    return true;
}

static bool bittw_js_get_int(Napi::Env env, Napi::Value v, const char *what, int *out)
{
    if (v.IsBoolean()) { /* reverse flags */
        *out = v.As<Napi::Boolean>().Value() ? 1 : 0;
        return true;
    }
    int64_t i = 0;
    if (!bittw_js_get_i64(env, v, what, &i))
        return false;
    if (i < -2147483647 - 1 || i > 2147483647)
        return bittw_js_range_error(env, what, v, "int32");
    *out = (int)i;
    return true;
}

/* An int32 (a priority): an integer number or bigint; no booleans. */
static bool bittw_js_get_i32(Napi::Env env, Napi::Value v, const char *what, int32_t *out)
{
    int64_t i = 0;
    if (!bittw_js_get_i64(env, v, what, &i))
        return false;
    if (i < INT32_MIN || i > INT32_MAX)
        return bittw_js_range_error(env, what, v, "int32");
    *out = (int32_t)i;
    return true;
}

/* An array of names (strings or Buffers without NUL), copied. */
static bool bittw_js_get_texts(Napi::Env env, Napi::Value v, const char *what, std::vector<std::string> *out)
{
    out->clear();
    if (!v.IsArray())
        return bittw_js_type_error(env, what, "an array of names", v);
    Napi::Array a = v.As<Napi::Array>();
    uint32_t n = a.Length();
    out->resize(n);
    for (uint32_t i = 0; i < n; i++) {
        bool null_ = false;
        if (!bittw_js_get_text(env, a.Get(i), false, what, &(*out)[i], &null_))
            return false;
    }
    return true;
}

/* An array of uint64 (outbox sequence numbers); null gives "none" when
 * allowed ("no list" and "[]" differ). */
static bool bittw_js_get_u64s(Napi::Env env, Napi::Value v, bool allow_null, const char *what,
                              std::vector<uint64_t> *out, bool *is_null)
{
    out->clear();
    *is_null = false;
    if (allow_null && bittw_js_is_nullish(v)) {
        *is_null = true;
        return true;
    }
    if (!v.IsArray())
        return bittw_js_type_error(env, what, "an array of integers", v);
    Napi::Array a = v.As<Napi::Array>();
    uint32_t n = a.Length();
    out->reserve(n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t u = 0;
        if (!bittw_js_get_u64(env, a.Get(i), what, &u))
            return false;
        out->push_back(u);
    }
    return true;
}

/* The deliveries of queue ack_many: an array of [id, token] pairs, copied
 * (a null token stays NULL: the call refuses it). */
struct bittw_deliveries {
    std::vector<uint64_t> ids;
    std::vector<std::string> texts;
    std::vector<char> nulls;
    std::vector<const char *> tokens; /* into texts, made by finish() */
    void finish()
    {
        tokens.resize(ids.size() + 1);
        for (size_t i = 0; i < ids.size(); i++)
            tokens[i] = nulls[i] ? NULL : texts[i].c_str();
    }
};
static bool bittw_js_get_deliveries(Napi::Env env, Napi::Value v, bittw_deliveries *out)
{
    if (!v.IsArray())
        return bittw_js_type_error(env, "deliveries", "an array of [id, token] pairs", v);
    Napi::Array a = v.As<Napi::Array>();
    uint32_t n = a.Length();
    out->texts.resize(n);
    out->nulls.resize(n);
    out->ids.resize(n);
    for (uint32_t i = 0; i < n; i++) {
        Napi::Value pair = a.Get(i);
        if (!pair.IsArray() || pair.As<Napi::Array>().Length() != 2)
            return bittw_js_type_error(env, "a delivery", "an [id, token] pair", pair);
        bool null_ = false;
        if (!bittw_js_get_u64(env, pair.As<Napi::Array>().Get(0u), "id", &out->ids[i]) ||
            !bittw_js_get_text(env, pair.As<Napi::Array>().Get(1u), true, "token", &out->texts[i], &null_))
            return false;
        out->nulls[i] = null_;
    }
    out->finish();
    return true;
}

static Napi::Value bittw_js_ints(Napi::Env env, const int *v, size_t n)
{
    Napi::Array a = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++)
        a.Set((uint32_t)i, Napi::Number::New(env, v[i]));
    return a;
}

/* An array of byte strings (get-many keys), borrowed. */
static bool bittw_js_get_keys(Napi::Env env, Napi::Value v, std::vector<const void *> *ptrs,
                              std::vector<size_t> *lens)
{
    if (!v.IsArray())
        return bittw_js_type_error(env, "keys", "an array of Buffers", v);
    Napi::Array a = v.As<Napi::Array>();
    uint32_t n = a.Length();
    ptrs->resize(n);
    lens->resize(n);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = NULL;
        if (!bittw_js_get_bytes(env, a.Get(i), false, "a key", &p, &(*lens)[i]))
            return false;
        (*ptrs)[i] = p;
    }
    return true;
}

/* ---- cancel tokens ---------------------------------------------------------------- */
/* A bitt_cancel (bitt.h) for JS: an External tagged as one, holding a
 * shared reference, so that a call in flight keeps the token alive after JS
 * dropped it (bitt.h: free a token only when no call uses it). lib/cancel.js
 * makes one per call that may wait and fires it when the AbortSignal
 * aborts; the core's wait then returns BITT_ECANCELED having taken nothing. */
using bittw_cancel_ptr = std::shared_ptr<bitt_cancel>;
static const napi_type_tag bittw_cancel_tag = {0x6269747463616e63ULL, 0x656c20746f6b656eULL};

static Napi::Value bittw_js_cancel_new(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    bitt_cancel *c = NULL;
    int rc = bitt_cancel_new(&c);
    if (rc < 0) {
        bittw_js_throw_last(env, rc);
        return Napi::Value();
    }
    auto *ref = new bittw_cancel_ptr(c, bitt_cancel_free);
    Napi::External<bittw_cancel_ptr> ext =
        Napi::External<bittw_cancel_ptr>::New(env, ref, [](Napi::Env, bittw_cancel_ptr *p) { delete p; });
    napi_type_tag_object(env, ext, &bittw_cancel_tag);
    return ext;
}

/* A token argument (null/undefined: none). */
static bool bittw_js_get_cancel(Napi::Env env, Napi::Value v, bittw_cancel_ptr *out)
{
    out->reset();
    if (bittw_js_is_nullish(v))
        return true;
    bool tagged = false;
    if (v.IsExternal() && napi_check_object_type_tag(env, v, &bittw_cancel_tag, &tagged) == napi_ok && tagged) {
        *out = *v.As<Napi::External<bittw_cancel_ptr>>().Data();
        return true;
    }
    return bittw_js_type_error(env, "cancel", "a cancel token (bittw_cancel_new)", v);
}

/* bittw_cancel_fire(token): safe while a call waits on it (bitt.h). */
static Napi::Value bittw_js_cancel_fire(const Napi::CallbackInfo &info)
{
    bittw_cancel_ptr c;
    if (!bittw_js_get_cancel(info.Env(), info.Length() ? info[0] : info.Env().Undefined(), &c))
        return Napi::Value();
    bitt_cancel_fire(c.get());
    return info.Env().Undefined();
}

static Napi::Value bittw_js_cancel_fired(const Napi::CallbackInfo &info)
{
    bittw_cancel_ptr c;
    if (!bittw_js_get_cancel(info.Env(), info.Length() ? info[0] : info.Env().Undefined(), &c))
        return Napi::Value();
    return Napi::Boolean::New(info.Env(), bitt_cancel_fired(c.get()) != 0);
}

/* ---- values out -------------------------------------------------------------- */
static Napi::Value bittw_js_bytes(Napi::Env env, const uint8_t *p, size_t n)
{
    return Napi::Buffer<uint8_t>::Copy(env, p ? p : (const uint8_t *)"", n);
}

static Napi::Value bittw_js_str(Napi::Env env, const char *s)
{
    if (!s)
        return env.Null();
    return Napi::String::New(env, s);
}

static Napi::Value bittw_js_u64(Napi::Env env, uint64_t v)
{
    return Napi::BigInt::New(env, v);
}

static Napi::Value bittw_js_i64(Napi::Env env, int64_t v)
{
    return Napi::BigInt::New(env, v);
}

/* The JS layer's entry factory, (key, value, kind, version, expiresAt) ->
 * an object, one per thread as the error factory: V8 builds an object
 * literal in one step, quicker than setting fields from here and without
 * the array the JS layer then turned into an object. */
static thread_local Napi::FunctionReference *bittw_js_entry_factory = nullptr;

/* An entry as {key, value (the stored bytes), kind, version (bigint),
 * expiresAt (ms: a number, or a bigint past 2^53, where a ttl saturates)}. key: the key the caller gave
 * (get/take), so it is not copied back; empty: copied from the entry. */
static Napi::Value bittw_js_entry(Napi::Env env, const bitt_entry *e, Napi::Value key = Napi::Value())
{
    if (!e)
        return env.Null();
    if (key.IsEmpty()) {
        size_t kl = 0;
        const uint8_t *k = bitt_entry_key(e, &kl);
        key = bittw_js_bytes(env, k, kl);
    }
    size_t vl = 0;
    const uint8_t *v = bitt_entry_value(e, &vl);
    int64_t exp = bitt_entry_expires_at(e);
    const int64_t safe = 9007199254740991; /* 2^53 - 1 */
    napi_value f[5] = {key, bittw_js_bytes(env, v, vl), Napi::Number::New(env, bitt_entry_kind(e)),
                       bittw_js_u64(env, bitt_entry_version(e)),
                       exp >= -safe && exp <= safe ? Napi::Number::New(env, (double)exp) : bittw_js_i64(env, exp)};
    if (bittw_js_entry_factory)
        return bittw_js_entry_factory->Call({f[0], f[1], f[2], f[3], f[4]});
    Napi::Object o = Napi::Object::New(env);
    static const char *const names[5] = {"key", "value", "kind", "version", "expiresAt"};
    for (int i = 0; i < 5; i++)
        o.Set(names[i], Napi::Value(env, f[i]));
    return o;
}

/* [[entry or null, ...], cursor or null] */
static Napi::Value bittw_js_entries(Napi::Env env, const bitt_entries *es)
{
    size_t n = es ? bitt_entries_count(es) : 0;
    Napi::Array list = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++)
        list.Set((uint32_t)i, bittw_js_entry(env, bitt_entries_at(es, i)));
    Napi::Array a = Napi::Array::New(env, 2);
    a.Set(0u, list);
    a.Set(1u, bittw_js_str(env, es ? bitt_entries_cursor(es) : NULL));
    return a;
}

static Napi::Value bittw_js_message(Napi::Env env, const bitt_message *m)
{
    if (!m)
        return env.Null();
    size_t pl = 0, rl = 0;
    const uint8_t *p = bitt_message_payload(m, &pl);
    const uint8_t *r = bitt_message_result(m, &rl);
    Napi::Array a = Napi::Array::New(env, 17);
    a.Set(0u, bittw_js_u64(env, bitt_message_id(m)));
    a.Set(1u, bittw_js_str(env, bitt_message_topic(m)));
    a.Set(2u, bittw_js_bytes(env, p, pl));
    a.Set(3u, Napi::Number::New(env, bitt_message_kind(m)));
    a.Set(4u, bittw_js_str(env, bitt_message_token(m)));
    a.Set(5u, Napi::Number::New(env, bitt_message_attempts(m)));
    a.Set(6u, Napi::Number::New(env, bitt_message_max_attempts(m)));
    a.Set(7u, bittw_js_str(env, bitt_message_last_error(m)));
    a.Set(8u, bittw_js_i64(env, bitt_message_created_at(m)));
    a.Set(9u, bittw_js_i64(env, bitt_message_due_at(m)));
    a.Set(10u, bittw_js_i64(env, bitt_message_failed_at(m)));
    a.Set(11u, Napi::Number::New(env, bitt_message_park_reason(m)));
    a.Set(12u, Napi::Number::New(env, bitt_message_state(m)));
    a.Set(13u, Napi::Number::New(env, bitt_message_priority(m)));
    a.Set(14u, bittw_js_i64(env, bitt_message_done_at(m)));
    a.Set(15u, r ? bittw_js_bytes(env, r, rl) : env.Null());
    a.Set(16u, Napi::Number::New(env, bitt_message_result_kind(m)));
    return a;
}

static Napi::Value bittw_js_messages(Napi::Env env, const bitt_messages *ms)
{
    size_t n = ms ? bitt_messages_count(ms) : 0;
    Napi::Array list = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++)
        list.Set((uint32_t)i, bittw_js_message(env, bitt_messages_at(ms, i)));
    return list;
}

static Napi::Value bittw_js_schedule(Napi::Env env, const bitt_schedule *s)
{
    if (!s)
        return env.Null();
    size_t pl = 0;
    const uint8_t *p = bitt_schedule_payload(s, &pl);
    Napi::Array a = Napi::Array::New(env, 9);
    a.Set(0u, bittw_js_str(env, bitt_schedule_key(s)));
    a.Set(1u, bittw_js_i64(env, bitt_schedule_interval(s)));
    a.Set(2u, bittw_js_bytes(env, p, pl));
    a.Set(3u, Napi::Number::New(env, bitt_schedule_kind(s)));
    a.Set(4u, bittw_js_i64(env, bitt_schedule_next_run_at(s)));
    a.Set(5u, bittw_js_i64(env, bitt_schedule_occurrence(s)));
    a.Set(6u, bittw_js_str(env, bitt_schedule_cron(s)));
    a.Set(7u, bittw_js_str(env, bitt_schedule_topic(s)));
    a.Set(8u, bittw_js_u64(env, bitt_schedule_message_id(s)));
    return a;
}

static Napi::Value bittw_js_schedules(Napi::Env env, bitt_schedule *const *list, size_t n)
{
    Napi::Array a = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++)
        a.Set((uint32_t)i, bittw_js_schedule(env, list[i]));
    return a;
}

static Napi::Value bittw_js_stats(Napi::Env env, const bitt_queue_stats *st)
{
    Napi::Array a = Napi::Array::New(env, 6);
    a.Set(0u, bittw_js_u64(env, st->pending));
    a.Set(1u, bittw_js_u64(env, st->delayed));
    a.Set(2u, bittw_js_u64(env, st->processing));
    a.Set(3u, bittw_js_u64(env, st->dead));
    a.Set(4u, bittw_js_i64(env, st->oldest_pending_at));
    a.Set(5u, bittw_js_u64(env, st->done));
    return a;
}

#endif

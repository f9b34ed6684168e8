/*
 * extras.hpp: the hand-written Node-API functions besides the Promise API:
 * the tuple codec, one store shared by worker threads, the error factory,
 * cancel tokens (js_values.hpp), and the registration of them all next to
 * SWIG's wrappers. Included by
 * async.hpp.
 */
#ifndef BITT_NODE_EXTRAS_HPP
#define BITT_NODE_EXTRAS_HPP

/* ---- the tuple codec and the error factory (synchronous, no store) -------------- */
/* Parts: Buffer -> bytes, string -> string (UTF-8), bigint -> int,
 * number -> float, boolean -> bool, {string: Buffer} -> a string part
 * from raw bytes (to test refusals). */
static Napi::Value bittw_js_tuple_encode(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsArray()) {
        bittw_js_type_error(env, "key", "an array (a tuple key)", info.Length() ? info[0] : env.Undefined());
        return Napi::Value();
    }
    Napi::Array parts = info[0].As<Napi::Array>();
    bittw_buf_out key;
    for (uint32_t i = 0; i < parts.Length(); i++) {
        Napi::Value p = parts.Get(i);
        std::string what = "tuple part " + std::to_string(i);
        int rc;
        const uint8_t *bp = NULL;
        size_t bn = 0;
        if (p.IsBoolean()) {
            rc = bitt_tuple_push_bool(&key.b, p.As<Napi::Boolean>().Value() ? 1 : 0);
        } else if (p.IsBigInt()) {
            int64_t v = 0;
            if (!bittw_js_get_i64(env, p, what.c_str(), &v))
                return Napi::Value();
            rc = bitt_tuple_push_int(&key.b, v);
        } else if (p.IsNumber()) {
            rc = bitt_tuple_push_float(&key.b, p.As<Napi::Number>().DoubleValue());
        } else if (p.IsString()) {
            std::string u = p.As<Napi::String>().Utf8Value();
            rc = bitt_tuple_push_string(&key.b, u.data(), u.size());
        } else if (p.IsTypedArray() && p.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
            bittw_js_get_bytes(env, p, false, what.c_str(), &bp, &bn);
            rc = bitt_tuple_push_bytes(&key.b, bp, bn);
        } else if (p.IsObject() && !p.IsArray() && p.As<Napi::Object>().Has("string")) {
            if (!bittw_js_get_bytes(env, p.As<Napi::Object>().Get("string"), false, "a raw string part", &bp, &bn))
                return Napi::Value();
            rc = bitt_tuple_push_string(&key.b, (const char *)bp, bn);
        } else {
            bittw_js_type_error(env, what.c_str(), "a Buffer, a Uint8Array, a string, a bigint, a number or a boolean", p);
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

/* ---- one store shared by worker threads ------------------------------------------ */
/* share() takes a reference on the box and gives a token (its address as a
 * bigint) that another thread's attach() turns into a handle on the same
 * box, taking that reference over; release() gives a reference back. The
 * tokens not attached yet are kept process-wide, so that a token attaches
 * once and anything else is refused (never dereferenced). */
static std::mutex bittw_tokens_lock;
static std::unordered_multiset<uint64_t> bittw_tokens;

static Napi::Value bittw_js_share(const Napi::CallbackInfo &info)
{
    BittwArgs a(info);
    bittw_store *box = a.store(0);
    if (!a.ok())
        return Napi::Value();
    if (bittw_enter(box) != 0) {
        bittw_js_throw(a.env(), BITT_EUSAGE, "the store is closed");
        return Napi::Value();
    }
    bittw_leave(box);
    bittw_ref(box);
    uint64_t token = (uint64_t)(uintptr_t)box;
    std::lock_guard<std::mutex> g(bittw_tokens_lock);
    bittw_tokens.insert(token);
    return Napi::BigInt::New(a.env(), token);
}

static Napi::Value bittw_js_attach(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    uint64_t token = 0;
    if (!bittw_js_get_u64(env, info.Length() ? info[0] : env.Undefined(), "token", &token))
        return Napi::Value();
    {
        std::lock_guard<std::mutex> g(bittw_tokens_lock);
        auto it = bittw_tokens.find(token);
        if (it == bittw_tokens.end()) {
            bittw_js_throw(env, BITT_EUSAGE, "not a share token, or one already attached");
            return Napi::Value();
        }
        bittw_tokens.erase(it);
    }
    return bittw_js_new_store(env, (bittw_store *)(uintptr_t)token);
}

static Napi::Value bittw_js_release(const Napi::CallbackInfo &info)
{
    BittwArgs a(info);
    bittw_store *box = a.store(0);
    if (!a.ok())
        return Napi::Value();
    bittw_unref(box);
    return a.env().Undefined();
}

static void bittw_js_drop_factories(void *)
{
    delete bittw_js_error_factory;
    bittw_js_error_factory = nullptr;
    delete bittw_js_entry_factory;
    bittw_js_entry_factory = nullptr;
}

/* Keeps the JS function given in *slot (this thread's), dropped with the
 * environment. */
static Napi::Value bittw_js_keep_factory(const Napi::CallbackInfo &info, Napi::FunctionReference **slot)
{
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsFunction()) {
        Napi::TypeError::New(env, "expected a function").ThrowAsJavaScriptException();
        return Napi::Value();
    }
    if (!bittw_js_error_factory && !bittw_js_entry_factory)
        napi_add_env_cleanup_hook(env, bittw_js_drop_factories, NULL);
    if (!*slot)
        *slot = new Napi::FunctionReference();
    **slot = Napi::Persistent(info[0].As<Napi::Function>());
    return env.Undefined();
}

static Napi::Value bittw_js_set_error_factory(const Napi::CallbackInfo &info)
{
    return bittw_js_keep_factory(info, &bittw_js_error_factory);
}

static Napi::Value bittw_js_set_entry_factory(const Napi::CallbackInfo &info)
{
    return bittw_js_keep_factory(info, &bittw_js_entry_factory);
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
    BITTW_REG(bitt_queue_ack_many) BITTW_REG(bitt_queue_snooze)
    BITTW_REG(bitt_queue_extend) BITTW_REG(bitt_queue_dead_list) BITTW_REG(bitt_queue_dead_retry)
    BITTW_REG(bitt_queue_dead_delete) BITTW_REG(bittw_queue_stats) BITTW_REG(bitt_lease_acquire)
    BITTW_REG(bitt_lease_renew) BITTW_REG(bitt_lease_release) BITTW_REG(bitt_lease_get)
    BITTW_REG(bitt_outbox_append) BITTW_REG(bitt_outbox_pending) BITTW_REG(bitt_outbox_ack)
    BITTW_REG(bitt_outbox_retry) BITTW_REG(bitt_outbox_discard) BITTW_REG(bitt_outbox_fail)
    BITTW_REG(bitt_outbox_park) BITTW_REG(bitt_outbox_parked) BITTW_REG(bitt_outbox_counts)
    BITTW_REG(bitt_pubsub_publish) BITTW_REG(bitt_pubsub_subscribe) BITTW_REG(bitt_pubsub_next)
    BITTW_REG(bitt_budget_take) BITTW_REG(bitt_schedule_upsert) BITTW_REG(bitt_schedule_claim)
    BITTW_REG(bitt_schedule_get) BITTW_REG(bitt_schedule_delete) BITTW_REG(bittw_schedule_list)
    BITTW_REG(bittw_queue_enqueue2) BITTW_REG(bittw_queue_dequeue_topics) BITTW_REG(bitt_queue_get)
    BITTW_REG(bitt_queue_cancel) BITTW_REG(bitt_queue_reschedule)
    BITTW_REG(bitt_queue_ack_result) BITTW_REG(bitt_queue_purge) BITTW_REG(bittw_schedule_set)
#undef BITTW_REG
    /* The names of the synchronous wrappers that take a cancel token (the
     * Promise forms take one as their last argument). */
    as.Set("bittw_queue_dequeue_cancel", as.Get("bittw_queue_dequeue"));
    as.Set("bitt_pubsub_next_cancel", as.Get("bitt_pubsub_next"));
    exports.Set("async", as);
    exports.Set("bittw_tuple_encode", Napi::Function::New(env, bittw_js_tuple_encode, "bittw_tuple_encode"));
    exports.Set("bittw_tuple_decode", Napi::Function::New(env, bittw_js_tuple_decode, "bittw_tuple_decode"));
    exports.Set("bittw_share", Napi::Function::New(env, bittw_js_share, "bittw_share"));
    exports.Set("bittw_attach", Napi::Function::New(env, bittw_js_attach, "bittw_attach"));
    exports.Set("bittw_release", Napi::Function::New(env, bittw_js_release, "bittw_release"));
    exports.Set("bittw_set_error_factory", Napi::Function::New(env, bittw_js_set_error_factory, "bittw_set_error_factory"));
    exports.Set("bittw_set_entry_factory", Napi::Function::New(env, bittw_js_set_entry_factory, "bittw_set_entry_factory"));
    exports.Set("bittw_cancel_new", Napi::Function::New(env, bittw_js_cancel_new, "bittw_cancel_new"));
    exports.Set("bittw_cancel_fire", Napi::Function::New(env, bittw_js_cancel_fire, "bittw_cancel_fire"));
    exports.Set("bittw_cancel_fired", Napi::Function::New(env, bittw_js_cancel_fired, "bittw_cancel_fired"));
}

#endif

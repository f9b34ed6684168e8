/*
 * core/redis/functions.c: every script as one Redis Functions library
 * (Redis 7+), called with FCALL.
 *
 * Why: an EVALSHA script is a chunk, so each call runs the library's ~40
 * function definitions (closures made, then dropped) before its body:
 * that, not the body's Redis commands, was most of a commit's server time.
 * A library's top level runs once, at FUNCTION LOAD; a call runs only its
 * callback, which starts with bind(KEYS, ARGV) like a script does.
 *
 * Versions: the library is named after a hash of its text (bitt_<16 hex>)
 * and so are its functions (bitt_<16 hex>_<script id>), so bitt builds
 * with different scripts can share one server, each calling its own
 * library, and a changed script can never run against an older text. A
 * library is loaded with FUNCTION LOAD REPLACE (idempotent: the same name
 * always has the same text) when FCALL answers "Function not found": on
 * the first call to a new server, or after FUNCTION FLUSH. Functions live
 * in the RDB and AOF and reach replicas, so a restart usually keeps them;
 * libraries of older bitt builds stay there until an operator runs
 * FUNCTION DELETE bitt_<hash> (FUNCTION LIST names them).
 *
 * A server that refuses FUNCTION LOAD or FCALL (an ACL without them, a
 * Redis-compatible server without Functions) makes this backend use
 * EVALSHA from then on (scripts.c): the same scripts, the same results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_internal.h"

/* The library's text, its header line naming `lib` and each function
 * lib_<id>; malloc'd, NULL on out of memory. */
static char *library_text(const char *lib, size_t *len)
{
    const char *libs[4] = {bitt__rd_lua_base, bitt__rd_lua_qcore, bitt__rd_lua_queue,
                           bitt__rd_lua_big};
    size_t cap = 256;
    for (int i = 0; i < 4; i++)
        cap += strlen(libs[i]);
    for (int id = 0; id < RS_COUNT; id++)
        cap += strlen(bitt__rd_scripts[id].body) + 256;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    size_t at = (size_t)snprintf(text, cap, "#!lua name=%s\n", lib);
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(libs[i]);
        memcpy(text + at, libs[i], n);
        at += n;
    }
    for (int id = 0; id < RS_COUNT; id++) {
        const bitt_rd_script *s = &bitt__rd_scripts[id];
        at += (size_t)snprintf(text + at, cap - at,
                               "\n-- %s\nredis.register_function{function_name = '%s_%d', "
                               "flags = {%s}, callback = function(KEYS, ARGV)\n"
                               "bind(KEYS, ARGV)\n%s"
                               "end}\n",
                               s->name, lib, id,
                               (s->flags & RS_READONLY)    ? "'no-writes'"
                               : (s->flags & RS_ALLOW_OOM) ? "'allow-oom'"
                                                           : "",
                               s->body);
    }
    *len = at;
    return text;
}

/* FNV-1a, 64 bits: names a library text (no security role). */
static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Sets be->fn_lib to the library's versioned name, and be->fn_name[] to
 * its functions' (at open: only read after), so a call formats nothing. */
int bitt__rd_fn_name(bitt_backend *be)
{
    size_t len = 0;
    char *text = library_text("bitt", &len);
    if (!text)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory for the function library");
    snprintf(be->fn_lib, sizeof be->fn_lib, "bitt_%016llx",
             (unsigned long long)text_hash(text, len));
    free(text);
    for (int id = 0; id < RS_COUNT; id++)
        be->fn_name_len[id] =
            (size_t)snprintf(be->fn_name[id], sizeof be->fn_name[id], "%s_%d", be->fn_lib, id);
    return BITT_OK;
}

/* Loads the library. BITT_OK with be->fn_off set when the server refused
 * it while the connection stayed up (scripts then). */
static int load_library(bitt_backend *be)
{
    size_t len = 0;
    char *text = library_text(be->fn_lib, &len);
    if (!text)
        return bitt__fail(BITT_ENOMEM, "redis: out of memory for the function library");
    bitt_rd_args a;
    bitt__rd_args_init(&a);
    bitt__rd_arg_str(&a, "FUNCTION");
    bitt__rd_arg_str(&a, "LOAD");
    bitt__rd_arg_str(&a, "REPLACE");
    bitt__rd_arg(&a, text, len);
    a.retry = 1; /* loading the same text twice is harmless */
    redisReply *r = NULL;
    int rc = bitt__rd_call(be, "FUNCTION LOAD", &a, 1, &r);
    const int lost = a.lost;
    bitt__rd_args_free(&a);
    free(text);
    if (r)
        freeReplyObject(r);
    if (rc && !lost) {
        be->fn_off = 1;
        bitt__error_reset();
        return BITT_OK;
    }
    return rc;
}

int bitt__rd_fcall(bitt_backend *be, bitt_rd_script_id id, bitt_rd_args *a, size_t items,
                   redisReply **out)
{
    *out = NULL;
    a->v[0] = "FCALL";
    a->len[0] = 5;
    a->v[1] = be->fn_name[id];
    a->len[1] = be->fn_name_len[id];
    a->retry = (bitt__rd_scripts[id].flags & RS_READONLY) != 0;
    /* At most: not found (a new server), a load, the call again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = bitt__rd_call(be, bitt__rd_scripts[id].name, a, items, out);
        if (rc == BITT_RD_FN_REFUSED) {
            be->fn_off = 1;
            return BITT_RD_FN_REFUSED;
        }
        if (rc != BITT_RD_NOFUNCTION)
            return rc;
        if ((rc = load_library(be)))
            return rc;
        if (be->fn_off)
            return BITT_RD_FN_REFUSED;
    }
    return bitt__fail(BITT_EBACKEND, "redis %s: %s: the server keeps forgetting library %s",
                      be->where, bitt__rd_scripts[id].name, be->fn_lib);
}

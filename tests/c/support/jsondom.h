/*
 * tests/c/support/jsondom.h: a small JSON DOM for the test runners.
 *
 * Enough for the contract files: objects (members kept in file order),
 * arrays, strings with every escape (\uXXXX with surrogate pairs, giving
 * UTF-8; a string may hold NUL bytes, so use its length), numbers kept as
 * their source text (so 64-bit integers stay exact), true, false and null.
 */
#ifndef BITT_TEST_JSON_H
#define BITT_TEST_JSON_H

#include <stddef.h>

typedef enum js_type {
    JS_NULL,
    JS_FALSE,
    JS_TRUE,
    JS_NUMBER,
    JS_STRING,
    JS_ARRAY,
    JS_OBJECT
} js_type;

typedef struct js_value js_value;

struct js_value {
    js_type type;
    char *str;        /* JS_STRING: the bytes (NUL-terminated); JS_NUMBER: the text */
    size_t len;       /* length of str */
    size_t count;     /* JS_ARRAY, JS_OBJECT: number of items */
    js_value **items; /* the elements, or the members' values */
    char **keys;      /* JS_OBJECT: the members' names */
    int line;         /* the line where the value starts (1-based) */
};

/* Parses one JSON text (nothing but whitespace may follow). On failure
 * returns NULL and writes "line L col C: what" into err. */
js_value *js_parse(const char *text, size_t len, char *err, size_t err_len);
/* Reads and parses a file; on failure NULL with a message in err. */
js_value *js_parse_file(const char *path, char *err, size_t err_len);
void js_free(js_value *v);

/* The member's value, or NULL when v is not an object or has no such
 * member. A JSON null member is returned as a JS_NULL value. */
const js_value *js_get(const js_value *v, const char *name);
/* The i-th element of an array, or NULL. */
const js_value *js_at(const js_value *v, size_t i);
/* A short name of the type ("string", "object", ...). */
const char *js_type_name(js_type t);

#endif /* BITT_TEST_JSON_H */

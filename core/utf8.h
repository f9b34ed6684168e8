/*
 * core/utf8.h: one strict UTF-8 check shared by the tuple codec (strings)
 * and the JSON validator. Private to the library; not part of internal.h so
 * that only the two codecs see it.
 *
 * Strict means RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF),
 * nothing above U+10FFFF, no stray continuation bytes, no truncation.
 */
#ifndef BITT_UTF8_H
#define BITT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Checks the one UTF-8 sequence that starts at p (n >= 1 bytes available).
 * Returns its length (1..4) when valid. Returns 0 when not, with *bad set to
 * the index (from p) of the first byte that makes it invalid; *bad == n
 * means the sequence was cut off by the end of the input.
 */
static inline size_t bitt__utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
    uint8_t c = p[0];
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    size_t more;

    if (c < 0x80)
        return 1;
    if (c < 0xC2) { /* continuation byte, or a 2-byte overlong lead */
        *bad = 0;
        return 0;
    }
    if (c < 0xE0) {
        more = 1;
    } else if (c < 0xF0) {
        more = 2;
        if (c == 0xE0)
            lo = 0xA0; /* below is an overlong 3-byte form */
        else if (c == 0xED)
            hi = 0x9F; /* above are the surrogates */
    } else if (c < 0xF5) {
        more = 3;
        if (c == 0xF0)
            lo = 0x90; /* below is an overlong 4-byte form */
        else if (c == 0xF4)
            hi = 0x8F; /* above is past U+10FFFF */
    } else {
        *bad = 0;
        return 0;
    }
    for (size_t k = 1; k <= more; k++) {
        if (k >= n || p[k] < lo || p[k] > hi) {
            *bad = k < n ? k : n;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return more + 1;
}

/* 0 when p[0..n) is all valid UTF-8, else the offset + 1 of the first bad
 * byte (n + 1 when the text ends inside a sequence). */
static inline size_t bitt__utf8_invalid_at(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad = 0;
        size_t k = bitt__utf8_seq(p + i, n - i, &bad);
        if (!k)
            return i + bad + 1;
        i += k;
    }
    return 0;
}

#endif /* BITT_UTF8_H */

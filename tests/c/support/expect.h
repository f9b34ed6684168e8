/*
 * tests/c/support/expect.h: checks several test programs make on a store.
 */
#ifndef BITT_TEST_EXPECT_H
#define BITT_TEST_EXPECT_H

#include <stdint.h>

#include "bitt.h"

/* Fails the test unless key (a C string) holds the counter want; the
 * message names the key and both values. */
void ts_expect_counter(bitt_store *s, const char *key, int64_t want);

#endif /* BITT_TEST_EXPECT_H */

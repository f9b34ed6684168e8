/*
 * tests/c/support/scale.h: how heavy the load tests run. BITT_TEST_SCALE
 * (a factor, default 1) shrinks their operation and process counts, so a
 * slow runner such as valgrind (scripts/test-valgrind sets 0.05) still runs
 * every program and every case, on less work.
 */
#ifndef BITT_TEST_SCALE_H
#define BITT_TEST_SCALE_H

/* n times BITT_TEST_SCALE, at least min_n (and never more than n). */
int ts_scaled(int n, int min_n);
/* For loops that fail the N-th allocation for N = 1, 2, ...: try every
 * ts_stride()-th N (1 / BITT_TEST_SCALE, at least 1). */
long ts_stride(void);

#endif /* BITT_TEST_SCALE_H */

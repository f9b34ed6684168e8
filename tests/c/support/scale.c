/* BITT_TEST_SCALE: see scale.h. */
#include "scale.h"

#include <stdlib.h>

static double factor(void)
{
    const char *text = getenv("BITT_TEST_SCALE");
    double f = text && *text ? atof(text) : 1.0;
    return f > 0.0 && f <= 1.0 ? f : 1.0;
}

long ts_stride(void)
{
    return (long)(1.0 / factor() + 0.5);
}

int ts_scaled(int n, int min_n)
{
    double f = factor();
    int scaled = (int)(n * f);
    if (scaled < min_n)
        scaled = min_n;
    return scaled > n ? n : scaled;
}

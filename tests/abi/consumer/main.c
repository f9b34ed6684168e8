/*
 * main.c: a program that uses an installed bitt. It checks the loaded
 * library against the header, then sets and reads back a key on memory: and
 * on sqlite::memory:. Exits 0 when everything matched.
 */
#include <stdio.h>
#include <string.h>

#include <bitt.h>

static int round_trip(const char *url)
{
    static const char key[] = "consumer\0key";      /* bytes, with a NUL */
    static const char value[] = "value\xff\x00end"; /* not UTF-8 */
    bitt_store *store = NULL;
    bitt_entry *entry = NULL;
    size_t len = 0;
    int failed = 1;

    int rc = bitt_store_open(url, &store);
    if (rc != BITT_OK) {
        fprintf(stderr, "%s: open: %s\n", url, bitt_error_last());
        return 1;
    }
    rc = bitt_kv_set(store, key, sizeof(key) - 1, value, sizeof(value) - 1, BITT_KIND_BYTES,
                     BITT_TTL_NONE, NULL);
    if (rc != BITT_OK) {
        fprintf(stderr, "%s: set: %s\n", url, bitt_error_last());
    } else if ((rc = bitt_kv_get(store, key, sizeof(key) - 1, &entry)) != BITT_OK) {
        fprintf(stderr, "%s: get: status %d %s\n", url, rc, bitt_error_last());
    } else {
        const uint8_t *got = bitt_entry_value(entry, &len);
        if (len != sizeof(value) - 1 || memcmp(got, value, len) != 0)
            fprintf(stderr, "%s: get: another value came back\n", url);
        else
            failed = 0;
    }
    bitt_entry_free(entry);
    bitt_store_close(store);
    if (!failed)
        printf("%s: set and get ok\n", url);
    return failed;
}

int main(void)
{
    int failed = 0;
    printf("bitt %s, header %s\n", bitt_version(), BITT_VERSION_STRING);
    if (bitt_version_number() != BITT_VERSION_NUMBER ||
        strcmp(bitt_version(), BITT_VERSION_STRING) != 0) {
        fprintf(stderr, "the library is not the version of the header\n");
        failed = 1;
    }
    failed |= round_trip("memory:");
    failed |= round_trip("sqlite::memory:");
    return failed;
}

/*
 * bench/queue_control_bench.c: what queue control costs, on each backend
 * named, each against itself in the same run (issue 23's "Measured"):
 *
 *   priority   a cycle (one commit of 100 enqueues, one dequeue of 100,
 *              100 acks) whose messages carry priorities 0..9, against the
 *              same cycle at priority 0
 *   topics10   the same 100 messages spread over 10 topics and claimed by
 *              one dequeue over the 10, against one topic and a plain
 *              dequeue
 *
 * The two sides of a ratio alternate in R slices, so that drift (a busy
 * machine, a growing table) hits both alike.
 *
 *   queue_control_bench [-r ROUNDS] [-s SECONDS] URL...
 *     URL      a store: sqlite:/tmp/q.db, postgres://..., redis://...
 *     -s S     time per side per URL (default 2)
 *     -r R     slices per side (default 4)
 *
 * Prints jobs/s per cell and the ratios. No figure is asserted anywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bitt.h"

#define PAYLOAD_SIZE 64
#define BATCH 100
#define TOPICS 10

static uint8_t g_payload[PAYLOAD_SIZE];
static const char *const g_topics[TOPICS] = {"w0", "w1", "w2", "w3", "w4",
                                             "w5", "w6", "w7", "w8", "w9"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "queue_control_bench: %s: %s\n", what, bitt_error_last());
        exit(1);
    }
}

/* How a cycle's messages are made and claimed. */
typedef struct shape {
    int priorities; /* message i gets priority i % 10 */
    int topics;     /* messages over this many topics (1 = "w0" alone) */
} shape;

/* One cycle: BATCH enqueues in one commit, one dequeue of them all, an ack
 * each; the number of jobs done. */
static uint64_t cycle(bitt_store *s, const shape *sh)
{
    bitt_txn *txn;
    check(bitt_txn_begin(s, &txn), "txn begin");
    for (int i = 0; i < BATCH; i++) {
        bitt_enqueue_options o = BITT_ENQUEUE_OPTIONS_INIT;
        o.priority = sh->priorities ? i % 10 : 0;
        check(bitt_txn_enqueue(txn, g_topics[i % sh->topics], g_payload, PAYLOAD_SIZE,
                               BITT_KIND_BYTES, &o),
              "txn enqueue");
    }
    check(bitt_txn_commit(txn, NULL), "txn commit");
    bitt_txn_free(txn);
    bitt_dequeue_options d = BITT_DEQUEUE_OPTIONS_INIT;
    d.limit = BATCH;
    bitt_messages *list;
    if (sh->topics > 1)
        check(bitt_queue_dequeue_topics(s, g_topics, (size_t)sh->topics, &d, NULL, &list),
              "dequeue over topics");
    else
        check(bitt_queue_dequeue(s, g_topics[0], &d, &list), "dequeue");
    size_t n = bitt_messages_count(list);
    for (size_t i = 0; i < n; i++) {
        const bitt_message *m = bitt_messages_at(list, i);
        check(bitt_queue_ack(s, bitt_message_topic(m), bitt_message_id(m), bitt_message_token(m)),
              "ack");
    }
    bitt_messages_free(list);
    return n;
}

typedef struct tally {
    uint64_t jobs;
    double secs;
} tally;

static void run_for(bitt_store *s, const shape *sh, double secs, tally *t)
{
    double start = now_s(), end = start + secs, now;
    do {
        t->jobs += cycle(s, sh);
        now = now_s();
    } while (now < end);
    t->secs += now - start;
}

static double rate(const tally *t)
{
    return t->secs > 0 ? (double)t->jobs / t->secs : 0;
}

/* Runs `a` against `base` on store s in alternating slices; prints both. */
static void compare(bitt_store *s, const char *backend, const char *name, const shape *a,
                    const shape *base, double secs, int rounds)
{
    tally ta = {0, 0}, tb = {0, 0};
    for (int i = 0; i < rounds; i++) {
        run_for(s, base, secs / rounds, &tb);
        run_for(s, a, secs / rounds, &ta);
    }
    printf("%-10s %-10s %14.0f %14.0f %8.3f\n", backend, name, rate(&ta), rate(&tb),
           rate(&ta) / rate(&tb));
    fflush(stdout);
}

static void usage(void)
{
    fprintf(stderr, "usage: queue_control_bench [-r ROUNDS] [-s SECONDS] URL...\n");
    exit(64);
}

int main(int argc, char **argv)
{
    double secs = 2.0;
    int rounds = 4, opt;
    while ((opt = getopt(argc, argv, "r:s:h")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 's': secs = atof(optarg); break;
        default: usage();
        }
    }
    if (optind >= argc || rounds < 1 || !(secs > 0))
        usage();
    for (int i = 0; i < PAYLOAD_SIZE; i++)
        g_payload[i] = (uint8_t)('a' + i % 26);
    printf("queue_control_bench: bitt %s; %d-byte payloads; a cycle = 1 commit of %d enqueues, "
           "1 dequeue of %d, %d acks; %.2f s per side in %d slices\n\n",
           bitt_version(), PAYLOAD_SIZE, BATCH, BATCH, BATCH, secs, rounds);
    printf("%-10s %-10s %14s %14s %8s\n", "backend", "cell", "jobs/s", "baseline/s", "ratio");
    static const shape plain = {0, 1}, prio = {1, 1}, spread = {0, TOPICS};
    for (int i = optind; i < argc; i++) {
        bitt_store *s;
        if (bitt_store_open(argv[i], &s) != BITT_OK) {
            fprintf(stderr, "queue_control_bench: %s\n", bitt_error_last());
            return 1;
        }
        compare(s, bitt_store_backend(s), "priority", &prio, &plain, secs, rounds);
        compare(s, bitt_store_backend(s), "topics10", &spread, &plain, secs, rounds);
        bitt_store_close(s);
    }
    return 0;
}

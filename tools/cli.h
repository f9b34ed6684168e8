/*
 * cli.h: the pieces the `bitt` command-line tool shares between its files.
 * The tool is built on the public header bitt.h only.
 */
#ifndef BITT_CLI_H
#define BITT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bitt.h"

/* Exit codes: a missing key is 1, a failure from the library 2, and a
 * command line that cannot be understood 64 (EX_USAGE). */
enum { CLI_OK = 0, CLI_NOTFOUND = 1, CLI_ERROR = 2, CLI_USAGE = 64 };

#define CLI_DEFAULT_STORE "sqlite:bitt.db"

/* Options that every command accepts, before or after its name. */
typedef struct cli {
    const char *store_url; /* --store, else $BITT_STORE, else the default */
    int hex_in;            /* --hex: KEY, VALUE, --prefix/--start/--end are hex */
    int hex_out;           /* --hex-out: keys and values print as hex */
    int json;              /* --json: one JSON document (every command) */
    int tsv;               /* --tsv: tables without header, TAB-separated, ms */
    int quiet;             /* -q, --quiet: no reason on stderr for exit 1 */
    int raw;               /* --raw: get writes the value bytes unchanged */
    int raw_ok;            /* set by the one command that takes --raw */
} cli;

/* ---- interrupt.c: SIGINT/SIGTERM end a wait ------------------------------ */

/* The token a waiting command passes to the *_cancel calls: fired by the
 * first SIGINT or SIGTERM from then on (a second one exits at once). NULL
 * if it cannot be set up: the signals then keep their default action. */
bitt_cancel *cli_interrupt_token(void);
/* The exit status after a wait the token ended: 128 + the signal. */
int cli_interrupted(void);

/* ---- args.c: option parsing and reporting ------------------------------ */

#define CLI_MAX_OPTS 12
/* queue pop takes up to BITT_DEQUEUE_TOPICS_MAX topics; one more reaches
 * the core, whose refusal names the limit */
#define CLI_MAX_POS (BITT_DEQUEUE_TOPICS_MAX + 1)

/* One option of a command, such as {"ttl", 1} for "--ttl MS". */
typedef struct cli_optspec {
    const char *name; /* without the leading "--" */
    int takes_value;
} cli_optspec;

typedef struct cli_args {
    const char *value[CLI_MAX_OPTS]; /* by spec index: NULL if absent, "" for a flag */
    const char *pos[CLI_MAX_POS];
    int npos;
    int help; /* -h or --help was given: print the usage and exit 0 */
} cli_args;

/*
 * Parses argv (the words after the command's name) into *out. cmd names the
 * command in messages ("kv set"). The shared options of struct cli are
 * accepted too. Returns CLI_OK, or CLI_USAGE after printing the problem and
 * a hint. A word that starts with '-' and a digit is an argument (a negative
 * DELTA), and "--" ends the options.
 */
int cli_parse(cli *c, const char *cmd, int argc, char **argv, const cli_optspec *specs,
              size_t nspecs, int min_pos, int max_pos, cli_args *out);

/* Prints "bitt: <message>" and a hint to stderr, returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Decimal integers; a bad one is a usage error (printed). */
int cli_parse_i64(const char *cmd, const char *what, const char *s, int64_t *out);
int cli_parse_i32(const char *cmd, const char *what, const char *s, int32_t *out);
int cli_parse_u32(const char *cmd, const char *what, const char *s, uint32_t *out);

/* An absent or refused result (exit 1): prints "bitt: <reason>" (escaped
 * onto one line) on stderr unless --quiet, and returns CLI_NOTFOUND. */
int cli_absent(const cli *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "bitt: <message>" for a negative status (the thread's last error,
 * else bitt_strerror) and returns CLI_ERROR. Call it before any other bitt
 * call, or the message is gone. */
int cli_fail(int status);

/* Opens c->store_url; on failure prints the error and returns CLI_ERROR. */
int cli_open(const cli *c, bitt_store **out);

/* Flushes stdout; a write error turns code into CLI_ERROR. */
int cli_finish(int code);

/* ---- bytes.c: bytes from arguments, bytes to text ---------------------- */

typedef struct cli_bytes {
    const uint8_t *ptr;
    size_t len;
    uint8_t *owned; /* freed by cli_bytes_free */
} cli_bytes;

/* The bytes of an argument: the text itself, or decoded hex with --hex.
 * Returns CLI_OK or CLI_USAGE (printed). */
int cli_bytes_arg(const cli *c, const char *cmd, const char *what, const char *arg, cli_bytes *out);
void cli_bytes_free(cli_bytes *b);

/* Decodes hex ("00ff", either case, even length) into a new buffer. Returns
 * 0, or -1 when the text is not hex, or -2 when out of memory. */
int cli_hex_decode(const char *hex, uint8_t **out, size_t *out_len);

/* 1 when the bytes are valid UTF-8. */
int cli_is_utf8(const uint8_t *p, size_t n);
/* 1 when the bytes are valid UTF-8 with no control characters other than
 * tab and newline: such a value prints as it is. */
int cli_is_text(const uint8_t *p, size_t n);

void cli_put_hex(FILE *f, const uint8_t *p, size_t n);
/* Printable UTF-8 as it is, a backslash as "\\", every other byte "\xNN". */
void cli_put_escaped(FILE *f, const uint8_t *p, size_t n);
/* A JSON string literal of valid UTF-8 (check it with cli_is_utf8 first). */
void cli_put_json_string(FILE *f, const uint8_t *p, size_t n);

/* ---- output.c: entries on stdout --------------------------------------- */

/* get: the value alone (as text, escaped, hex or raw) and a newline. */
void cli_put_value(const cli *c, const bitt_entry *e);
/* One JSON object: key, value, kind, version, expires_at. */
void cli_put_json_entry(const cli *c, const bitt_entry *e);
/* "name":V for bytes of a kind, as cli_put_json_entry prints a value: JSON
 * embedded, a counter as a number, other UTF-8 as a string, anything else
 * as "name_hex":"..". */
void cli_put_json_value(const cli *c, const char *name, const uint8_t *p, size_t n, int kind);
/* "name":"text" (NULL as null); the text is UTF-8 from the library. */
void cli_put_json_text(const char *name, const char *s);
/* ,"name":MS, or ,"name":null for 0 (none). */
void cli_put_json_time(const char *name, int64_t ms);
/* ,"kind":"bytes" (a kind this tool does not know as its number). */
void cli_put_json_kind(int kind);
/* The name of a kind ("bytes", "json", "counter"), or NULL. */
const char *cli_kind_name(int kind);
/* With --json, the document of an absent item: null and a newline. */
void cli_put_json_null(const cli *c);

/* ---- table.c: rows for people, or for scripts (--tsv) ------------------- */

#define CLI_TABLE_MAX_COLS 8

/*
 * For people (the default), a header of column names and aligned rows:
 * times ISO 8601 UTC, durations such as "1m30s". With --tsv, the same
 * columns TAB-separated with no header, times and durations in ms. Either
 * way every cell is escaped onto one line (cli_put_escaped), so no cell
 * holds a TAB or a newline. A row ends with its last cell.
 */
typedef struct cli_table {
    const cli *c;
    const char *const *columns;
    size_t ncols;
    size_t col; /* the next cell's column */
    int stream; /* print every row when it ends (a listener) */
    int headed; /* the header is out */
    FILE *f;    /* the rows not yet printed, or stdout with --tsv */
    char *buf;  /* what f holds (open_memstream) */
    size_t len;
    size_t width[CLI_TABLE_MAX_COLS]; /* in code points, never shrinks */
} cli_table;

void cli_table_init(cli_table *t, const cli *c, const char *const *columns, size_t ncols,
                    int stream);
/* A text cell: escaped; NULL or "" as "-" for people (empty with --tsv). */
void cli_cell_text(cli_table *t, const char *s);
/* Bytes: escaped, or hex with --hex-out. */
void cli_cell_bytes(cli_table *t, const uint8_t *p, size_t n);
void cli_cell_u64(cli_table *t, uint64_t v);
void cli_cell_i64(cli_table *t, int64_t v);
/* A time in ms: for people ISO 8601, none for 0 and "never" for the end
 * of time (INT64_MAX); with --tsv the integer. */
void cli_cell_time(cli_table *t, int64_t ms, const char *none);
/* A duration in ms: for people "1m30s", none for 0; with --tsv the integer. */
void cli_cell_duration(cli_table *t, int64_t ms, const char *none);
/* Prints the rows so far (the header above the first): CLI_OK, or
 * CLI_ERROR when the rows could not be kept (out of memory, printed). */
int cli_table_flush(cli_table *t);
/* cli_table_flush, then frees the table. */
int cli_table_done(cli_table *t);

/* ---- times.c: times and durations for people ----------------------------- */

#define CLI_TIME_LEN 48

/* "2026-12-03T12:00:05.123Z" (UTC; a year past 9999 as "+12345-..."). */
void cli_format_time(int64_t ms, char out[CLI_TIME_LEN]);
/* "250ms", "1.5s", "1m30s", "2d3h": exact, the largest unit first. */
void cli_format_duration(int64_t ms, char out[CLI_TIME_LEN]);

/* ---- group.c: command groups and the options they share ----------------- */

typedef struct cli_sub {
    const char *name;
    int (*run)(cli *c, int argc, char **argv);
} cli_sub;

/* Runs the subcommand argv names (after shared options), or prints usage
 * for --help. group names the group in messages ("queue"); names lists the
 * subcommands for the "missing subcommand" message. */
int cli_group(cli *c, const char *group, const char *usage, const char *names, const cli_sub *subs,
              size_t nsubs, int argc, char **argv);
/* Prints usage on stdout and returns cli_finish(CLI_OK). */
int cli_help(const char *usage);
/* bytes, json or counter into *kind, or a usage error (printed). */
int cli_parse_kind(const char *cmd, const char *s, int *kind);
/* A duration or time in ms: an int64 >= 0, or a usage error (printed). */
int cli_parse_ms(const char *cmd, const char *what, const char *s, int64_t *out);
/* An id or sequence number: a uint64 >= 1, or a usage error (printed). */
int cli_parse_id(const char *cmd, const char *what, const char *s, uint64_t *out);

/* ---- messages.c: queue messages, outbox events, published messages ------ */

/* One JSON object of any message: id, topic, payload, kind, and the fields
 * its module uses (token, attempts, ...). field names the payload
 * ("payload", "event", "data"). */
void cli_put_json_message(const cli *c, const bitt_message *m, const char *field);

/* How a list of messages prints: {"<key>":[...]} with --json, else a table
 * of these columns, a row each by put_row. */
typedef struct cli_message_view {
    const char *key;   /* "messages", "events" */
    const char *field; /* the payload's name in JSON */
    const char *const *columns;
    size_t ncols;
    void (*put_row)(cli_table *t, const bitt_message *m);
} cli_message_view;

/* Prints the list; returns CLI_OK or CLI_ERROR (printed). */
int cli_put_messages(const cli *c, const bitt_messages *list, const cli_message_view *view);

/* ---- commands ---------------------------------------------------------- */

int cli_kv(cli *c, int argc, char **argv);      /* kv_cmd.c: argv after "kv" */
int cli_kv_list(cli *c, int argc, char **argv); /* kv_list.c: argv after "list" */
extern const char cli_kv_list_usage[];
int cli_queue(cli *c, int argc, char **argv);                /* queue_cmd.c */
int cli_queue_dead(cli *c, int argc, char **argv);           /* queue_dead.c: dead */
int cli_queue_retry(cli *c, int argc, char **argv);          /* queue_dead.c: retry */
int cli_queue_purge(cli *c, int argc, char **argv);          /* queue_dead.c: purge-dead */
int cli_queue_purge_retained(cli *c, int argc, char **argv); /* queue_dead.c: purge */
/* queue_by_id.c: get, cancel and reschedule of one message by its id */
int cli_queue_get(cli *c, int argc, char **argv);
int cli_queue_cancel(cli *c, int argc, char **argv);
int cli_queue_reschedule(cli *c, int argc, char **argv);
/* "pending", "delayed", "leased" or "dead" for a BITT_MSG_* state; "-" else */
const char *cli_message_state_name(int state);
int cli_lease(cli *c, int argc, char **argv);    /* lease_cmd.c */
int cli_outbox(cli *c, int argc, char **argv);   /* outbox_cmd.c */
int cli_schedule(cli *c, int argc, char **argv); /* schedule_cmd.c */
int cli_budget(cli *c, int argc, char **argv);   /* budget_cmd.c */
int cli_pubsub(cli *c, int argc, char **argv);   /* pubsub_cmd.c */

#endif /* BITT_CLI_H */

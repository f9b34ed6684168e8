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
    int json;              /* --json: print JSON (every command that prints) */
    int raw;               /* --raw: get writes the value bytes unchanged */
} cli;

/* ---- args.c: option parsing and reporting ------------------------------ */

#define CLI_MAX_OPTS 12
#define CLI_MAX_POS 16

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
int cli_parse_u32(const char *cmd, const char *what, const char *s, uint32_t *out);

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
/* list: "key<TAB>value" and a newline. */
void cli_put_line(const cli *c, const bitt_entry *e);
/* One JSON object: key, value, kind, version, expires_at. */
void cli_put_json_entry(const cli *c, const bitt_entry *e);
/* A field of a line: escaped, or hex with --hex-out. */
void cli_put_field(const cli *c, const uint8_t *p, size_t n);
/* A text field of a line (NULL prints as empty), escaped like a value. */
void cli_put_text(const char *s);
/* "name":V for bytes of a kind, as cli_put_json_entry prints a value: JSON
 * embedded, a counter as a number, other UTF-8 as a string, anything else
 * as "name_hex":"..". */
void cli_put_json_value(const cli *c, const char *name, const uint8_t *p, size_t n, int kind);
/* "name":"text" (NULL as null); the text is UTF-8 from the library. */
void cli_put_json_text(const char *name, const char *s);
/* The name of a kind ("bytes", "json", "counter"), or NULL. */
const char *cli_kind_name(int kind);

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

/* Lines of queue deliveries: id, token, attempts, payload. */
void cli_put_delivery_line(const cli *c, const bitt_message *m);
/* One JSON object of any message: id, topic, payload, kind, and the fields
 * its module uses (token, attempts, ...). field names the payload
 * ("payload", "event", "data"). */
void cli_put_json_message(const cli *c, const bitt_message *m, const char *field);
/* Prints a list of messages as lines (put_line) or as {"<key>":[...]}. */
void cli_put_messages(const cli *c, const bitt_messages *list, const char *key, const char *field,
                      void (*put_line)(const cli *, const bitt_message *));

/* ---- commands ---------------------------------------------------------- */

int cli_kv(cli *c, int argc, char **argv);      /* kv_cmd.c: argv after "kv" */
int cli_kv_list(cli *c, int argc, char **argv); /* kv_list.c: argv after "list" */
extern const char cli_kv_list_usage[];
int cli_queue(cli *c, int argc, char **argv);       /* queue_cmd.c */
int cli_queue_dead(cli *c, int argc, char **argv);  /* queue_dead.c: dead */
int cli_queue_retry(cli *c, int argc, char **argv); /* queue_dead.c: retry */
int cli_queue_purge(cli *c, int argc, char **argv); /* queue_dead.c: purge-dead */
int cli_lease(cli *c, int argc, char **argv);       /* lease_cmd.c */
int cli_outbox(cli *c, int argc, char **argv);      /* outbox_cmd.c */
int cli_schedule(cli *c, int argc, char **argv);    /* schedule_cmd.c */
int cli_budget(cli *c, int argc, char **argv);      /* budget_cmd.c */
int cli_pubsub(cli *c, int argc, char **argv);      /* pubsub_cmd.c */

#endif /* BITT_CLI_H */

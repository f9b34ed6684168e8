/*
 * lease_cmd.c: `bitt lease acquire|renew|release|get`: named locks with an
 * owner, an expiry and an epoch (a fencing token).
 */
#include <inttypes.h>

#include "cli.h"

#define LEASE_TTL_DEFAULT 30000

static const char lease_usage[] =
    "Usage: bitt [--store URL] lease <subcommand> [options]\n"
    "\n"
    "Subcommands:\n"
    "  acquire NAME OWNER [--ttl MS]         take NAME if free or expired\n"
    "  renew NAME OWNER EPOCH [--ttl MS]     extend a held lease\n"
    "  release NAME OWNER EPOCH              free a held lease\n"
    "  get NAME                              print the live holder\n"
    "\n"
    "acquire, renew and get print the lease as one row:\n"
    "\n"
    "    NAME         OWNER  EPOCH  EXPIRES_AT\n"
    "    partition/1  w2     7      2026-12-03T12:00:35.123Z\n"
    "\n"
    "Every acquisition increments the epoch of NAME, so an epoch is a fencing\n"
    "token: renew and release need the OWNER and EPOCH of the live lease.\n"
    "Times are UTC on the store's clock (--json, --tsv: ms since the epoch).\n"
    "Run 'bitt lease <subcommand> --help' for more.\n";

static const char acquire_usage[] =
    "Usage: bitt lease acquire NAME OWNER [--ttl MS] [--json | --tsv]\n"
    "\n"
    "Takes lease NAME for OWNER when it is free or expired, and prints it:\n"
    "\n"
    "    NAME  OWNER  EPOCH  EXPIRES_AT\n"
    "\n"
    "The epoch is new and higher than any before for NAME. While another\n"
    "acquisition is live (also one by the same OWNER) nothing changes, nothing\n"
    "is printed, and stderr says who holds it until when (unless --quiet).\n"
    "\n"
    "Options:\n"
    "  --ttl MS   the lease ends MS from now (default 30000)\n"
    "  --json     print {\"name\",\"acquired\":true,\"owner\",\"epoch\",\"expires_at\"};\n"
    "             while held, {\"name\",\"acquired\":false} with the holder's\n"
    "             \"owner\",\"epoch\",\"expires_at\"\n"
    "  --tsv      the row TAB-separated, no header, EXPIRES_AT in ms\n"
    "\n"
    "Exit status: 0 acquired, 1 held by someone, 2 error, 64 usage.\n";

static const char renew_usage[] =
    "Usage: bitt lease renew NAME OWNER EPOCH [--ttl MS] [--json | --tsv]\n"
    "\n"
    "Extends the live lease NAME held by OWNER at EPOCH to end MS from now\n"
    "(default 30000), and prints it as 'lease acquire' does. A lease that\n"
    "expired or was taken since is lost: an error, and nothing changes.\n"
    "\n"
    "  --json   print {\"name\",\"owner\",\"epoch\",\"expires_at\"}\n"
    "\n"
    "Exit status: 0 renewed, 2 error (a lost lease too), 64 usage.\n";

static const char release_usage[] =
    "Usage: bitt lease release NAME OWNER EPOCH [--json]\n"
    "\n"
    "Frees the live lease NAME held by OWNER at EPOCH; its epoch stays.\n"
    "--json: print {\"released\":true}.\n"
    "\n"
    "Exit status: 0 released, 2 error (a lost lease too), 64 usage.\n";

static const char get_usage[] =
    "Usage: bitt lease get NAME [--json | --tsv]\n"
    "\n"
    "Prints the live holder of lease NAME as 'lease acquire' does.\n"
    "\n"
    "  --json   print {\"name\",\"owner\",\"epoch\",\"expires_at\"}, or null when free\n"
    "\n"
    "Exit status: 0 held, 1 free or expired (\"bitt: lease NAME is free\" on\n"
    "stderr unless --quiet), 2 error, 64 usage.\n";

static int parse_ttl(const char *cmd, const char *s, int64_t *ttl)
{
    *ttl = LEASE_TTL_DEFAULT;
    return s ? cli_parse_ms(cmd, "--ttl", s, ttl) : CLI_OK;
}

/* The fields of one lease; acquired is NULL, "true" or "false". */
static void put_json_lease(const char *name, const char *acquired, const char *owner,
                           uint64_t epoch, int64_t expires)
{
    putchar('{');
    cli_put_json_text("name", name);
    if (acquired)
        printf(",\"acquired\":%s", acquired);
    if (owner) {
        putchar(',');
        cli_put_json_text("owner", owner);
        printf(",\"epoch\":%" PRIu64, epoch);
        cli_put_json_time("expires_at", expires);
    }
    fputs("}\n", stdout);
}

/* A lease as one row, or its JSON object. */
static int put_lease(const cli *c, const char *name, const char *acquired, const char *owner,
                     uint64_t epoch, int64_t expires)
{
    static const char *const columns[] = {"NAME", "OWNER", "EPOCH", "EXPIRES_AT"};
    if (c->json) {
        put_json_lease(name, acquired, owner, epoch, expires);
        return CLI_OK;
    }
    cli_table t;
    cli_table_init(&t, c, columns, 4, 0);
    cli_cell_text(&t, name);
    cli_cell_text(&t, owner);
    cli_cell_u64(&t, epoch);
    cli_cell_time(&t, expires, "-");
    return cli_table_done(&t);
}

/* acquire found NAME held: who holds it, on stderr and in the JSON. The
 * holder is read after the refusal, so it may have gone since: then the
 * reason says only that it was held. */
static int held_by_another(const cli *c, bitt_store *store, const char *name)
{
    bitt_buf owner = BITT_BUF_INIT;
    uint64_t epoch = 0;
    int64_t expires = 0;
    int rc = c->json || !c->quiet ? bitt_lease_get(store, name, &owner, &epoch, &expires) : -1;
    const char *who = rc == BITT_OK && owner.ptr ? (const char *)owner.ptr : NULL;
    char until[CLI_TIME_LEN];
    if (c->json)
        put_json_lease(name, "false", who, epoch, expires);
    if (who) {
        cli_format_time(expires, until);
        rc = cli_absent(c, "lease %s is held by %s (epoch %" PRIu64 ") until %s", name, who, epoch,
                        expires == INT64_MAX ? "the end of time" : until);
    } else {
        rc = cli_absent(c, "lease %s was held by another acquisition", name);
    }
    bitt_buf_dispose(&owner);
    return rc;
}

static int l_acquire(cli *c, int argc, char **argv)
{
    const char *cmd = "lease acquire";
    static const cli_optspec specs[] = {{"ttl", 1}};
    cli_args a;
    bitt_store *store = NULL;
    int64_t ttl;
    int code = cli_parse(c, cmd, argc, argv, specs, 1, 2, 2, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(acquire_usage) : code;
    if ((code = parse_ttl(cmd, a.value[0], &ttl)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t epoch = 0;
        int64_t expires = 0;
        int rc = bitt_lease_acquire(store, a.pos[0], a.pos[1], ttl, &epoch, &expires);
        if (rc < 0)
            code = cli_fail(rc);
        else if (rc == BITT_EXISTS)
            code = held_by_another(c, store, a.pos[0]);
        else
            code = put_lease(c, a.pos[0], "true", a.pos[1], epoch, expires);
    }
    bitt_store_close(store);
    return cli_finish(code);
}

/* renew and release: NAME OWNER EPOCH. */
static int held(cli *c, int argc, char **argv, int release)
{
    const char *cmd = release ? "lease release" : "lease renew";
    static const cli_optspec specs[] = {{"ttl", 1}};
    cli_args a;
    bitt_store *store = NULL;
    uint64_t epoch = 0;
    int64_t ttl;
    int code = cli_parse(c, cmd, argc, argv, specs, release ? 0 : 1, 3, 3, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(release ? release_usage : renew_usage) : code;
    if ((code = cli_parse_id(cmd, "EPOCH", a.pos[2], &epoch)) != CLI_OK ||
        (code = parse_ttl(cmd, a.value[0], &ttl)) != CLI_OK)
        return code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        int64_t expires = 0;
        int rc = release ? bitt_lease_release(store, a.pos[0], a.pos[1], epoch)
                         : bitt_lease_renew(store, a.pos[0], a.pos[1], epoch, ttl, &expires);
        if (rc < 0)
            code = cli_fail(rc);
        else if (!release)
            code = put_lease(c, a.pos[0], NULL, a.pos[1], epoch, expires);
        else if (c->json)
            fputs("{\"released\":true}\n", stdout);
    }
    bitt_store_close(store);
    return cli_finish(code);
}

static int l_renew(cli *c, int argc, char **argv)
{
    return held(c, argc, argv, 0);
}

static int l_release(cli *c, int argc, char **argv)
{
    return held(c, argc, argv, 1);
}

static int l_get(cli *c, int argc, char **argv)
{
    cli_args a;
    bitt_store *store = NULL;
    bitt_buf owner = BITT_BUF_INIT;
    int code = cli_parse(c, "lease get", argc, argv, NULL, 0, 1, 1, &a);
    if (code != CLI_OK || a.help)
        return a.help ? cli_help(get_usage) : code;
    if ((code = cli_open(c, &store)) == CLI_OK) {
        uint64_t epoch = 0;
        int64_t expires = 0;
        int rc = bitt_lease_get(store, a.pos[0], &owner, &epoch, &expires);
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            cli_put_json_null(c);
            code = cli_absent(c, "lease %s is free (no live holder)", a.pos[0]);
        } else {
            code = put_lease(c, a.pos[0], NULL, owner.ptr ? (const char *)owner.ptr : "", epoch,
                             expires);
        }
    }
    bitt_buf_dispose(&owner);
    bitt_store_close(store);
    return cli_finish(code);
}

int cli_lease(cli *c, int argc, char **argv)
{
    static const cli_sub subs[] = {
        {"acquire", l_acquire}, {"renew", l_renew}, {"release", l_release}, {"get", l_get}};
    return cli_group(c, "lease", lease_usage, "acquire, renew, release or get", subs,
                     sizeof(subs) / sizeof(subs[0]), argc, argv);
}

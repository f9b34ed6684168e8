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
    "  acquire NAME OWNER [--ttl MS]         take NAME if free or expired; print\n"
    "                                        epoch<TAB>expires_at\n"
    "  renew NAME OWNER EPOCH [--ttl MS]     extend a held lease; print expires_at\n"
    "  release NAME OWNER EPOCH              free a held lease\n"
    "  get NAME                              print owner<TAB>epoch<TAB>expires_at\n"
    "\n"
    "Every acquisition increments the epoch of NAME, so an epoch is a fencing\n"
    "token: renew and release need the OWNER and EPOCH of the live lease.\n"
    "Times are ms since the Unix epoch on the store's clock.\n"
    "Run 'bitt lease <subcommand> --help' for more.\n";

static const char acquire_usage[] =
    "Usage: bitt lease acquire NAME OWNER [--ttl MS] [--json]\n"
    "\n"
    "Takes lease NAME for OWNER when it is free or expired, and prints\n"
    "\n"
    "    epoch<TAB>expires_at\n"
    "\n"
    "The epoch is new and higher than any before for NAME. While another\n"
    "acquisition is live (also one by the same OWNER) nothing changes.\n"
    "\n"
    "Options:\n"
    "  --ttl MS   the lease ends MS from now (default 30000)\n"
    "  --json     print {\"epoch\":N,\"expires_at\":T}\n"
    "\n"
    "Exit status: 0 acquired, 1 held by someone, 2 error, 64 usage.\n";

static const char renew_usage[] =
    "Usage: bitt lease renew NAME OWNER EPOCH [--ttl MS] [--json]\n"
    "\n"
    "Extends the live lease NAME held by OWNER at EPOCH to end MS from now\n"
    "(default 30000), and prints its new expiry (ms). A lease that expired or\n"
    "was taken since is lost: an error, and nothing changes.\n"
    "\n"
    "  --json   print {\"expires_at\":T}\n"
    "\n"
    "Exit status: 0 renewed, 2 error (a lost lease too), 64 usage.\n";

static const char release_usage[] =
    "Usage: bitt lease release NAME OWNER EPOCH\n"
    "\n"
    "Frees the live lease NAME held by OWNER at EPOCH; its epoch stays.\n"
    "\n"
    "Exit status: 0 released, 2 error (a lost lease too), 64 usage.\n";

static const char get_usage[] =
    "Usage: bitt lease get NAME [--json]\n"
    "\n"
    "Prints the live holder of lease NAME:\n"
    "\n"
    "    owner<TAB>epoch<TAB>expires_at\n"
    "\n"
    "  --json   print {\"owner\":O,\"epoch\":N,\"expires_at\":T}\n"
    "\n"
    "Exit status: 0 held, 1 free or expired (nothing printed), 2 error, 64 usage.\n";

static int parse_ttl(const char *cmd, const char *s, int64_t *ttl)
{
    *ttl = LEASE_TTL_DEFAULT;
    return s ? cli_parse_ms(cmd, "--ttl", s, ttl) : CLI_OK;
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
            code = CLI_NOTFOUND;
        else if (c->json)
            printf("{\"epoch\":%" PRIu64 ",\"expires_at\":%" PRId64 "}\n", epoch, expires);
        else
            printf("%" PRIu64 "\t%" PRId64 "\n", epoch, expires);
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
        else if (!release && c->json)
            printf("{\"expires_at\":%" PRId64 "}\n", expires);
        else if (!release)
            printf("%" PRId64 "\n", expires);
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
        const char *who = owner.ptr ? (const char *)owner.ptr : "";
        if (rc < 0) {
            code = cli_fail(rc);
        } else if (rc == BITT_NOTFOUND) {
            code = CLI_NOTFOUND;
        } else if (c->json) {
            putchar('{');
            cli_put_json_text("owner", who);
            printf(",\"epoch\":%" PRIu64 ",\"expires_at\":%" PRId64 "}\n", epoch, expires);
        } else {
            cli_put_text(who);
            printf("\t%" PRIu64 "\t%" PRId64 "\n", epoch, expires);
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

#include "private_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ts_server_start(ts_server *s, const char *kind, const char *tag)
{
    memset(s, 0, sizeof *s);
    snprintf(s->script, sizeof s->script, "%s/../../scripts/%s-test-server", BITT_CONTRACT_DIR,
             kind);
    snprintf(s->dir, sizeof s->dir, "/tmp/bitt-%s-XXXXXX", tag);
    if (!mkdtemp(s->dir)) {
        perror("mkdtemp");
        return -1;
    }
    char cmd[800];
    snprintf(cmd, sizeof cmd, "'%s' start '%s'", s->script, s->dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    if (!fgets(s->url, sizeof s->url, p))
        s->url[0] = '\0';
    int status = pclose(p);
    s->url[strcspn(s->url, "\n")] = '\0';
    if (status != 0 || !strstr(s->url, "://")) {
        fprintf(stderr, "%s failed (status %d)\n", cmd, status);
        return -1;
    }
    return 0;
}

int ts_server_stop(ts_server *s)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null 2>&1; rm -rf '%s'", s->script, s->dir,
             s->dir);
    return system(cmd) == 0 ? 0 : -1;
}

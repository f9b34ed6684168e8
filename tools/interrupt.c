/*
 * Ctrl-C (SIGINT) and SIGTERM during a wait (queue pop --wait, pubsub
 * listen) end the wait through a bitt_cancel token instead of killing the
 * process inside it: a pop that is interrupted leases nothing (what its
 * claim got as the signal came is handed back by the library), and the
 * store is closed as usual. A signal handler may not call into the library
 * (bitt_cancel_fire takes a mutex), so the signals are blocked and one
 * thread takes them with sigwait. A second signal ends the process at once.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "cli.h"

static bitt_cancel *token;
static volatile sig_atomic_t caught;
static sigset_t signals;

static void *take_signals(void *arg)
{
    (void)arg;
    int sig = 0;
    if (sigwait(&signals, &sig) != 0)
        return NULL;
    caught = sig;
    bitt_cancel_fire(token);
    if (sigwait(&signals, &sig) == 0)
        _exit(128 + sig);
    return NULL;
}

bitt_cancel *cli_interrupt_token(void)
{
    if (token)
        return token;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    bitt_cancel *c = NULL;
    if (bitt_cancel_new(&c) != BITT_OK)
        return NULL; /* the signals keep their default action */
    sigset_t old;
    pthread_t thread;
    if (pthread_sigmask(SIG_BLOCK, &signals, &old) != 0) {
        bitt_cancel_free(c);
        return NULL;
    }
    token = c;
    if (pthread_create(&thread, NULL, take_signals, NULL) != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        token = NULL;
        bitt_cancel_free(c);
        return NULL;
    }
    pthread_detach(thread);
    return token;
}

int cli_interrupted(void)
{
    return 128 + (caught ? (int)caught : SIGINT);
}

/*
 * signals.c: recording through a signal storm, as a C host with timers of
 * its own makes one. A SIGALRM handler installed without SA_RESTART and
 * an interval timer of 20 us interrupt every thread of the process (the
 * library's writer and flush threads too: they do not block signals), so
 * system calls return EINTR and io_uring's worker threads fail to start
 * (its writes complete with -ECANCELED). For each back-end given, ROUNDS
 * recordings of 2,500 records of 1 KiB each must finish with 0, every
 * record written and none dropped (issue 42, finding 9: io_uring lost
 * whole recordings).
 *
 * Prints one line per back-end, "IO: failed F of ROUNDS rounds, S signals,
 * R writes resubmitted", and exits 0 when no round failed, 1 otherwise, 2
 * on bad usage.
 *
 * Usage: signals DIRECTORY ROUNDS IO...   (IO: buffered, direct, uring,
 * uring-buffered)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rtrec.h"

#define RECORDS 2500
#define RECORD_BYTES 1024

static volatile sig_atomic_t signals;

static void on_alarm(int sig)
{
    (void)sig;
    signals++;
}

static int backend(const char *name)
{
    static const char *const names[] = { "buffered", "direct", "uring", "uring-buffered" };
    static const int values[] = { RTREC_IO_BUFFERED, RTREC_IO_DIRECT, RTREC_IO_URING,
                                  RTREC_IO_URING_BUFFERED };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(name, names[k]) == 0)
            return values[k];
    return -1;
}

/* One recording; returns 0 when it is whole, else prints why and returns 1. */
static int round_of(const char *dir, int io, const char *name, int round, uint64_t *resubmitted)
{
    rtrec_config cfg = { .struct_size = sizeof cfg };
    cfg.max_record = RECORD_BYTES;
    cfg.file_size = 8u << 20;
    cfg.ring_bytes = 8u << 20; /* the whole round fits: no drop for want of room */
    cfg.alloc = RTREC_ALLOC_FALLOCATE;
    cfg.io = io;
    cfg.io_depth = 8;
    rtrec_recorder *rec = NULL;
    int ret = rtrec_recorder_create(dir, &cfg, &rec);
    if (ret < 0) {
        printf("%s round %d: create: %s (%s)\n", name, round, strerror(-ret), rtrec_last_error());
        return 1;
    }
    static unsigned char sample[RECORD_BYTES];
    for (uint64_t i = 0; i < RECORDS; i++) {
        memcpy(sample, &i, sizeof i);
        ret = rtrec_recorder_record(rec, sample, sizeof sample);
        if (ret < 0) {
            printf("%s round %d: record %" PRIu64 ": %s\n", name, round, i, strerror(-ret));
            break;
        }
    }
    rtrec_summary s = { .struct_size = sizeof s };
    ret = rtrec_recorder_finish(rec, &s);
    *resubmitted += s.io_resubmitted;
    free(s.file_names);
    if (ret < 0 || s.records_written != RECORDS || s.records_dropped != 0) {
        printf("%s round %d: finish = %d (%s), %" PRIu64 " written, %" PRIu64 " dropped: %s\n",
               name, round, ret, ret < 0 ? strerror(-ret) : "ok", s.records_written,
               s.records_dropped, rtrec_last_error());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: %s DIRECTORY ROUNDS IO...\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[2]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: interrupted calls fail with EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = { { 0, 20 }, { 0, 20 } };
    int failed_any = 0;
    for (int a = 3; a < argc; a++) {
        int io = backend(argv[a]);
        if (io < 0) {
            fprintf(stderr, "signals: unknown back-end '%s'\n", argv[a]);
            return 2;
        }
        int failed = 0;
        uint64_t resubmitted = 0;
        signals = 0;
        setitimer(ITIMER_REAL, &every, NULL);
        for (int r = 0; r < rounds; r++)
            failed += round_of(argv[1], io, argv[a], r, &resubmitted);
        struct itimerval off = { { 0, 0 }, { 0, 0 } };
        setitimer(ITIMER_REAL, &off, NULL);
        printf("%s: failed %d of %d rounds, %ld signals, %" PRIu64 " writes resubmitted\n",
               argv[a], failed, rounds, (long)signals, resubmitted);
        failed_any |= failed > 0;
    }
    return failed_any;
}

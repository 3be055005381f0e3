/*
 * threads.c: THREADS threads of one C program, each doing ROUNDS rounds of
 * create -> record -> finish in one directory. Run by
 * crates/ffi/tests/c_misuse.rs with the pool (the default) and without it
 * (argv[2] = "nopool"); every run must succeed. Prints
 * "failures F of N" and exits 0 only when F is 0.
 *
 * Usage: threads DIRECTORY [pool|nopool]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtrec.h"

#define THREADS 8
#define ROUNDS 20

static const char *dir;
static int nopool, failures, runs;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *run(void *arg)
{
    long t = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        rtrec_config cfg = { .struct_size = sizeof cfg };
        cfg.max_record = 1024;
        cfg.file_size = 1u << 20;
        cfg.ring_bytes = 1u << 20;
        if (nopool)
            cfg.alloc = RTREC_ALLOC_FALLOCATE;
        rtrec_recorder *rec = NULL;
        char buf[1024];
        memset(buf, (int)t, sizeof buf);
        int ret = rtrec_recorder_create(dir, &cfg, &rec);
        if (ret == 0) {
            for (int i = 0; i < 100; i++)
                rtrec_recorder_record(rec, buf, sizeof buf);
            rtrec_summary s = { .struct_size = sizeof s };
            ret = rtrec_recorder_finish(rec, &s);
            if (s.filled)
                free(s.file_names);
        }
        pthread_mutex_lock(&mu);
        runs++;
        if (ret != 0) {
            failures++;
            printf("thread %ld round %d: %d %s\n", t, r, ret, rtrec_last_error());
        }
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIRECTORY [pool|nopool]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    nopool = argc > 2 && strcmp(argv[2], "nopool") == 0;
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, run, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    printf("failures %d of %d\n", failures, runs);
    return failures != 0;
}

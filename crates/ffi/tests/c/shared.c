/*
 * shared.c: the documented misuse of 8 threads recording into one recorder
 * at once (docs/c-api.md, "Threads": one thread records). The library
 * need not store such records correctly, but rtrec_recorder_finish() must
 * return (issue 42, finding 12: it hung in 2 of 3 runs). Prints
 * "finish=R" and exits 0 when finish returned, whatever R is.
 *
 * Usage: shared DIRECTORY
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtrec.h"

#define THREADS 8
#define RECORDS 20000

static rtrec_recorder *rec;

static void *run(void *arg)
{
    char buf[256];
    memset(buf, (int)(long)arg, sizeof buf);
    for (int i = 0; i < RECORDS; i++)
        rtrec_recorder_record(rec, buf, sizeof buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    rtrec_config cfg = { .struct_size = sizeof cfg };
    cfg.max_record = 256;
    cfg.file_size = 4u << 20;
    cfg.ring_bytes = 64u << 10; /* small: the threads fill it, and race on its ends */
    cfg.alloc = RTREC_ALLOC_FALLOCATE;
    if (rtrec_recorder_create(argv[1], &cfg, &rec) != 0) {
        fprintf(stderr, "shared: create: %s\n", rtrec_last_error());
        return 1;
    }
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, run, (void *)k);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    rtrec_summary s = { .struct_size = sizeof s };
    int r = rtrec_recorder_finish(rec, &s);
    free(s.file_names);
    printf("finish=%d\n", r);
    return 0;
}

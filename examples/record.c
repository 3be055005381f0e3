/*
 * record.c: the rtrec C API in one program.
 *
 * Records 1,000 records of 4 KiB (the first 8 bytes are a counter, in host
 * byte order) into the directory given as argv[1], one every 1 ms on an
 * absolute schedule (rtrec_timer), then prints the summary as key=value
 * lines. An optional second argument picks the write back-end (buffered,
 * direct, uring or uring-buffered; io_uring with 8 writes in flight).
 * Exits 0 when all 1,000 records were stored, 1 on any failure or drop, 2
 * on bad usage.
 *
 * Build (from the repository root, after `cargo build --release -p rtrec-ffi`):
 *     cc -std=c99 -Wall -Wextra -Iinclude examples/record.c \
 *        target/release/librtrec.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc \
 *        -o record
 *     ./record /tmp/rec && rtrec verify /tmp/rec
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtrec.h"

#define RECORDS 1000
#define RECORD_BYTES 4096
#define PERIOD_NS 1000000u /* 1 ms */

/* Prints why a call failed (rtrec functions return -errno) and returns 1. */
static int failed(const char *what, int ret)
{
    fprintf(stderr, "record: %s: %s (%s)\n", what, strerror(-ret), rtrec_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    static const char *const backends[] = { "buffered", "direct", "uring", "uring-buffered" };
    static const int backend_values[] = { RTREC_IO_BUFFERED, RTREC_IO_DIRECT, RTREC_IO_URING,
                                          RTREC_IO_URING_BUFFERED };
    int io = RTREC_IO_BUFFERED;
    if (argc == 3) {
        io = -1;
        for (size_t k = 0; k < sizeof backends / sizeof backends[0]; k++)
            if (strcmp(argv[2], backends[k]) == 0)
                io = backend_values[k];
    }
    if ((argc != 2 && argc != 3) || io < 0) {
        fprintf(stderr, "usage: %s DIRECTORY [buffered|direct|uring|uring-buffered]\n", argv[0]);
        return 2;
    }

    /* What this program needs; every field left 0 is the default.
     * struct_size comes first. */
    rtrec_config cfg = { .struct_size = sizeof cfg };
    cfg.max_record = RECORD_BYTES;
    cfg.file_size = 8u << 20; /* 1,000 framed 4 KiB records fit in one file */
    cfg.ring_bytes = 4u << 20; /* a second of records: a write may stall that long */
    cfg.io = io;       /* the write back-end */
    cfg.io_depth = 8;  /* io_uring: writes in flight, one registered buffer each */
    if (rtrec_version() / 100 != RTREC_VERSION_MAJOR * 100 + RTREC_VERSION_MINOR) {
        fprintf(stderr, "record: built for librtrec %d.%d, running with %d\n", RTREC_VERSION_MAJOR,
                RTREC_VERSION_MINOR, rtrec_version());
        return 1;
    }

    /* Everything that can fail or block happens here, before recording. */
    rtrec_recorder *rec = NULL;
    int ret = rtrec_recorder_create(argv[1], &cfg, &rec);
    if (ret < 0)
        return failed("creating the recording", ret);
    rtrec_timer *timer = NULL;
    ret = rtrec_timer_create(PERIOD_NS, &timer);
    if (ret < 0) {
        rtrec_recorder_destroy(rec);
        return failed("creating the timer", ret);
    }

    /* The periodic loop: wait for the release, take the sample, record it.
     * rtrec_recorder_record() neither allocates nor blocks nor makes a
     * system call; a record it cannot store is dropped, counted and stored
     * as a loss, so the loop goes on. */
    static unsigned char sample[RECORD_BYTES];
    int status = 0;
    for (uint64_t i = 0; i < RECORDS && status == 0; i++) {
        ret = rtrec_timer_wait(timer, NULL);
        if (ret < 0) {
            status = failed("waiting for the next period", ret);
            break;
        }
        memcpy(sample, &i, sizeof i);
        memset(sample + sizeof i, (int)(i & 0xff), sizeof sample - sizeof i);
        ret = rtrec_recorder_record(rec, sample, sizeof sample);
        if (ret == -ENOBUFS || ret == -EMSGSIZE)
            continue; /* dropped and counted: the summary reports it */
        if (ret < 0)
            status = failed("recording", ret); /* -EIO: writing failed */
    }

    /* Finish (or abort after a failure); either frees the recorder. */
    rtrec_summary s = { .struct_size = sizeof s };
    ret = status ? rtrec_recorder_abort(rec, "the example failed", &s) : rtrec_recorder_finish(rec, &s);
    if (ret < 0)
        status = failed("finishing the recording", ret);
    if (s.filled) { /* also after a failure while recording: what was stored */
        int attached = rtrec_summary_attach_timer(&s, timer);
        if (attached < 0)
            status = failed("rtrec_summary_attach_timer", attached);
        printf("records_offered=%" PRIu64 "\n", s.records_offered);
        printf("records_written=%" PRIu64 "\n", s.records_written);
        printf("records_dropped=%" PRIu64 "\n", s.records_dropped);
        printf("bytes_written=%" PRIu64 "\n", s.bytes_written);
        printf("files=%" PRIu64 "\n", s.files);
        printf("max_write_ns=%" PRIu64 "\n", s.write_ns.max);
        printf("p99_write_ns=%" PRIu64 "\n", s.write_ns.p99);
        printf("max_record_ns=%" PRIu64 "\n", s.record_ns.max);
        printf("max_lateness_ns=%" PRIu64 "\n", s.lateness_ns.max);
        printf("missed_periods=%" PRIu64 "\n", s.missed_periods);
        printf("complete=%d\n", s.complete);
        printf("warnings=%u\n", s.warnings);
        for (const char *f = s.file_names; f && *f; f += strlen(f) + 1)
            printf("file=%s\n", f);
        free(s.file_names);
        if (s.records_dropped > 0) {
            fprintf(stderr, "record: %" PRIu64 " of %d records were dropped (stored as losses)\n",
                    s.records_dropped, RECORDS);
            status = 1;
        }
    }
    rtrec_timer_destroy(timer);
    return status;
}

/*
 * flight.c: a flight recorder with the rtrec C API.
 *
 * Takes a 1 KiB sample every 1 ms on an absolute schedule (rtrec_timer), but
 * keeps only what surrounds an event: the recorder holds the last 50 ms of
 * samples in memory, and each rtrec_recorder_trigger() writes them to a new
 * event file, followed by the next 50 ms of live samples. Here the "fault"
 * is simulated: a trigger every 200 samples, 10 events in all. Before
 * recording, the file pool of the directory is prepared (rtrec_pool_prepare)
 * so that no event file is allocated while recording.
 *
 * The first 8 bytes of each sample are its counter (host byte order). Run
 * with a directory as argv[1]; prints the summary as key=value lines. Exits
 * 0 when all 10 events were saved with nothing dropped, 1 on any failure,
 * 2 on bad usage.
 *
 * Build (from the repository root, after `cargo build --release -p rtrec-ffi`):
 *     cc -std=c99 -Wall -Wextra -Iinclude examples/flight.c \
 *        target/release/librtrec.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc \
 *        -o flight
 *     ./flight /tmp/flight && rtrec verify /tmp/flight
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtrec.h"

#define RECORD_BYTES 1024
#define PERIOD_NS 1000000u      /* a sample every 1 ms */
#define PRE_NS 50000000u        /* keep 50 ms before a trigger */
#define POST_NS 50000000u       /* and record 50 ms after it */
#define TRIGGER_EVERY 200       /* samples between triggers */
#define EVENTS 10
#define RECORDS (TRIGGER_EVERY * EVENTS)
#define POOL_FILE_SIZE (1u << 20) /* one event (~100 KiB) fits in a file */
#define POOL_FILES (EVENTS + 2)

/* Prints why a call failed (rtrec functions return -errno) and returns 1. */
static int failed(const char *what, int ret)
{
    fprintf(stderr, "flight: %s: %s (%s)\n", what, strerror(-ret), rtrec_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];

    /* Idle time: allocate and zero-fill the event files now, not while
     * recording. Returns how many files it prepared (0: the pool was full). */
    int ret = rtrec_pool_prepare(dir, POOL_FILE_SIZE, POOL_FILES);
    if (ret < 0)
        return failed("preparing the file pool", ret);
    printf("pool_prepared=%d\n", ret);

    rtrec_config cfg = { .struct_size = sizeof cfg }; /* zero means default */
    cfg.max_record = RECORD_BYTES;
    cfg.ring_bytes = 1u << 20;
    cfg.alloc = RTREC_ALLOC_POOL; /* the default, said out loud */
    cfg.file_size = POOL_FILE_SIZE; /* the pool's file size decides anyway */
    cfg.pool_files = POOL_FILES;
    cfg.flight_enabled = 1;
    cfg.flight_pre_ns = PRE_NS;
    cfg.flight_pre_bytes = 256u << 10; /* > 50 samples of 1 KiB + 24 bytes: time bounds the window */
    cfg.flight_post_ns = POST_NS;

    /* Everything that can fail or block happens here, before recording. */
    rtrec_recorder *rec = NULL;
    ret = rtrec_recorder_create(dir, &cfg, &rec);
    if (ret < 0)
        return failed("creating the flight recorder", ret);
    rtrec_timer *timer = NULL;
    ret = rtrec_timer_create(PERIOD_NS, &timer);
    if (ret < 0) {
        rtrec_recorder_destroy(rec);
        return failed("creating the timer", ret);
    }

    /* The periodic loop. rtrec_recorder_record() and
     * rtrec_recorder_trigger() neither allocate nor block nor make a system
     * call. The trigger comes mid-way between two others, so each event has
     * its whole pre- and post-trigger spans. */
    static unsigned char sample[RECORD_BYTES];
    int status = 0;
    for (uint64_t i = 0; i < RECORDS && status == 0; i++) {
        ret = rtrec_timer_wait(timer, NULL);
        if (ret < 0) {
            status = failed("waiting for the next period", ret);
            break;
        }
        if (i % TRIGGER_EVERY == TRIGGER_EVERY / 2) {
            ret = rtrec_recorder_trigger(rec); /* "something went wrong" */
            if (ret < 0) {
                status = failed("triggering", ret); /* -EIO: writing failed */
                break;
            }
        }
        memcpy(sample, &i, sizeof i);
        memset(sample + sizeof i, (int)(i & 0xff), sizeof sample - sizeof i);
        ret = rtrec_recorder_record(rec, sample, sizeof sample);
        if (ret == -ENOBUFS || ret == -EMSGSIZE)
            continue; /* dropped and counted: the summary reports it */
        if (ret < 0)
            status = failed("recording", ret);
    }

    /* Finish (or abort after a failure); either frees the recorder and
     * closes an event still in progress. */
    rtrec_summary s = { .struct_size = sizeof s };
    ret = status ? rtrec_recorder_abort(rec, "the example failed", &s) : rtrec_recorder_finish(rec, &s);
    if (ret < 0)
        status = failed("finishing the recording", ret);
    if (s.filled) { /* also after a failure while recording */
        int attached = rtrec_summary_attach_timer(&s, timer);
        if (attached < 0)
            status = failed("rtrec_summary_attach_timer", attached);
        printf("records_offered=%" PRIu64 "\n", s.records_offered);
        printf("records_written=%" PRIu64 "\n", s.records_written);
        printf("records_dropped=%" PRIu64 "\n", s.records_dropped);
        printf("triggers=%" PRIu64 "\n", s.triggers);
        printf("events=%" PRIu64 "\n", s.flight_events);
        printf("events_cut_short=%" PRIu64 "\n", s.flight_events_cut_short);
        printf("overwritten_records=%" PRIu64 "\n", s.flight_overwritten_records);
        printf("files=%" PRIu64 "\n", s.files);
        printf("pool_taken=%" PRIu64 "\n", s.pool_taken);
        printf("pool_fallbacks=%" PRIu64 "\n", s.pool_fallbacks);
        printf("max_record_ns=%" PRIu64 "\n", s.record_ns.max);
        printf("max_lateness_ns=%" PRIu64 "\n", s.lateness_ns.max);
        printf("missed_periods=%" PRIu64 "\n", s.missed_periods);
        printf("complete=%d\n", s.complete);
        free(s.file_names); /* the event files' names, unused here */
        if (s.flight_events != EVENTS) {
            fprintf(stderr, "flight: %" PRIu64 " of %d events were saved\n", s.flight_events, EVENTS);
            status = 1;
        }
        if (s.records_dropped > 0) {
            fprintf(stderr, "flight: %" PRIu64 " samples were dropped (stored as losses)\n",
                    s.records_dropped);
            status = 1;
        }
    }
    rtrec_timer_destroy(timer);

    /* What is left in the pool for the next run. */
    rtrec_pool_state ps = { .struct_size = sizeof ps };
    ret = rtrec_pool_status(dir, &ps);
    if (ret < 0)
        return failed("reading the pool's state", ret);
    printf("pool_ready=%" PRIu64 "\n", ps.ready_files);
    printf("pool_target=%" PRIu64 "\n", ps.target_files);
    return status;
}

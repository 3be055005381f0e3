/*
 * misuse.c: what a C program can do wrong with librtrec, and what it gets
 * back. Run by crates/ffi/tests/c_misuse.rs under AddressSanitizer and
 * under valgrind: every misuse must return its documented code without
 * touching freed memory, writing past a struct or printing anything, and
 * a failed create must leave no file. Prints "ok" and exits 0, or names
 * the first check that failed and exits 1.
 *
 * Two threads recording into one handle, or recording while another
 * finishes it, are not detected (docs/c-api.md, "Threads"), so not here.
 *
 * Usage: misuse DIRECTORY (empty, existing)
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtrec.h"

/* The mode's first name still builds and means the same. */
_Static_assert(RTREC_MODE_DIRECT == RTREC_MODE_INLINE, "RTREC_MODE_DIRECT is RTREC_MODE_INLINE");

static int failures;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stdout, "FAILED line %d: %s (last error: %s)\n", __LINE__, #cond, \
                    rtrec_last_error());                                            \
            failures++;                                                             \
        }                                                                           \
    } while (0)

/* Visible entries of DIR (hidden ones are rtrec's own, e.g. .pool). */
static int visible_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int warnings_logged;
static void on_log(void *ctx, int level, const char *message)
{
    CHECK(ctx == &warnings_logged);
    CHECK(level == RTREC_LOG_WARNING);
    CHECK(strstr(message, "CPU 4096") != NULL);
    warnings_logged++;
}

/* Two threads finishing one handle at once: one finishes it, the other
 * gets -EBADF (the table's lock decides). */
static void *finish_it(void *rec)
{
    return (void *)(intptr_t)rtrec_recorder_finish(rec, NULL);
}

static rtrec_config small(void)
{
    rtrec_config c = { .struct_size = sizeof c }; /* zero means default */
    c.max_record = 256;
    c.file_size = 1u << 20;
    c.ring_bytes = 1u << 16;
    c.alloc = RTREC_ALLOC_FALLOCATE; /* no pool: the directory stays plain */
    return c;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    char buf[256] = { 0 };
    CHECK(rtrec_version() == RTREC_VERSION_MAJOR * 10000 + RTREC_VERSION_MINOR * 100 + RTREC_VERSION_PATCH);

    rtrec_config cfg = small();
    rtrec_recorder *rec = NULL;

    /* A handle of one kind given where the other is expected: the first
     * recorder and the first timer of a process sit in slot 0 of their
     * tables with generation 1, so they must differ by their kind, or a
     * timer would finish the recorder (issue 42, finding 10). */
    rtrec_timer *t0 = NULL;
    CHECK(rtrec_timer_create(1000000, &t0) == 0);
    CHECK(rtrec_recorder_create(dir, &cfg, &rec) == 0);
    CHECK((uintptr_t)t0 != (uintptr_t)rec);
    CHECK(rtrec_recorder_finish((rtrec_recorder *)t0, NULL) == -EBADF);
    CHECK(rtrec_recorder_record((rtrec_recorder *)t0, buf, 1) == -EBADF);
    CHECK(rtrec_recorder_destroy((rtrec_recorder *)t0) == -EBADF);
    CHECK(rtrec_timer_wait((rtrec_timer *)rec, NULL) == -EBADF);
    CHECK(rtrec_timer_destroy((rtrec_timer *)rec) == -EBADF);
    CHECK(rtrec_recorder_record(rec, buf, 1) == 0);
    CHECK(rtrec_recorder_finish(rec, NULL) == 0);
    CHECK(rtrec_timer_destroy(t0) == 0);

    /* Use after finish, double finish, destroy and abort after finish. */
    CHECK(rtrec_recorder_create(dir, &cfg, &rec) == 0);
    CHECK(rtrec_recorder_record(rec, buf, sizeof buf) == 0);
    rtrec_summary s = { .struct_size = sizeof s };
    CHECK(rtrec_recorder_finish(rec, &s) == 0);
    CHECK(s.filled == 1 && s.files == 1 && s.records_written == 1);
    int names = 0;
    for (const char *f = s.file_names; f && *f; f += strlen(f) + 1)
        names++;
    CHECK(names == 1 && s.file_names_len > 2);
    free(s.file_names);
    CHECK(rtrec_recorder_record(rec, buf, sizeof buf) == -EBADF);
    CHECK(rtrec_recorder_trigger(rec) == -EBADF);
    CHECK(rtrec_recorder_finish(rec, &s) == -EBADF);
    CHECK(rtrec_recorder_abort(rec, "again", NULL) == -EBADF);
    CHECK(rtrec_recorder_destroy(rec) == -EBADF);
    CHECK(strstr(rtrec_last_error(), "not a live recorder") != NULL);
    /* A handle that never was one. */
    rtrec_recorder *garbage = (rtrec_recorder *)(uintptr_t)0x12345678;
    CHECK(rtrec_recorder_record(garbage, buf, 1) == -EBADF);
    CHECK(rtrec_recorder_destroy(garbage) == -EBADF);
    CHECK(rtrec_recorder_destroy(NULL) == 0);

    /* Destroy, then everything after it. */
    CHECK(rtrec_recorder_create(dir, &cfg, &rec) == 0);
    CHECK(rtrec_recorder_destroy(rec) == 0);
    CHECK(rtrec_recorder_record(rec, buf, 1) == -EBADF);
    CHECK(rtrec_recorder_destroy(rec) == -EBADF);

    /* Two threads finish one handle at once. */
    CHECK(rtrec_recorder_create(dir, &cfg, &rec) == 0);
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, finish_it, rec);
    pthread_create(&b, NULL, finish_it, rec);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    CHECK(((intptr_t)ra == 0 && (intptr_t)rb == -EBADF) || ((intptr_t)ra == -EBADF && (intptr_t)rb == 0));

    /* Timers: wait and destroy after destroy; a period that overflows. */
    rtrec_timer *t = NULL;
    CHECK(rtrec_timer_create(UINT64_MAX, &t) == -EINVAL && t == NULL);
    CHECK(rtrec_timer_create(1000000, &t) == 0);
    CHECK(rtrec_timer_destroy(t) == 0);
    CHECK(rtrec_timer_wait(t, NULL) == -EBADF);
    CHECK(rtrec_timer_destroy(t) == -EBADF);

    /* Struct sizes: garbage and between versions are refused, and nothing
     * is written (ASan sees any write past these structs). */
    rtrec_summary small_out[1];
    memset(small_out, 0, sizeof small_out);
    small_out[0].struct_size = 2000;
    CHECK(rtrec_recorder_create(dir, &cfg, &rec) == 0);
    CHECK(rtrec_recorder_finish(rec, &small_out[0]) == -EINVAL);
    CHECK(small_out[0].records_written == 0 && small_out[0].struct_size == 2000);
    rtrec_config between = small();
    between.struct_size = 89;
    rec = NULL;
    CHECK(rtrec_recorder_create(dir, &between, &rec) == -EINVAL && rec == NULL);
    CHECK(rtrec_config_init(&between) == -EINVAL);
    rtrec_config old = small();
    old.struct_size = 176; /* version 5, library 0.1 */
    CHECK(rtrec_recorder_create(dir, &old, &rec) == -EINVAL && rec == NULL);

    /* Impossible rings: one sentence, no abort, no file left behind. */
    int before = visible_entries(dir);
    rtrec_config huge = small();
    huge.ring_bytes = (size_t)1 << 40;
    CHECK(rtrec_recorder_create(dir, &huge, &rec) == -EINVAL);
    CHECK(strstr(rtrec_last_error(), "memory") != NULL);
    huge.ring_bytes = SIZE_MAX;
    CHECK(rtrec_recorder_create(dir, &huge, &rec) == -EINVAL);
    CHECK(visible_entries(dir) == before);

    /* A CPU that does not exist: a warning, to the log and counted. */
    CHECK(rtrec_set_log(on_log, &warnings_logged) == 0);
    rtrec_config pinned = small();
    pinned.pin = RTREC_PIN_WRITER;
    pinned.writer_cpu = 4096;
    CHECK(rtrec_recorder_create(dir, &pinned, &rec) == 0);
    rtrec_summary w = { .struct_size = sizeof w };
    CHECK(rtrec_recorder_finish(rec, &w) == 0);
    CHECK(w.filled == 1 && w.warnings == 1 && warnings_logged == 1);
    free(w.file_names);
    /* The flush thread's CPU likewise (it was silent: issue 42). */
    pinned.pin = RTREC_PIN_FLUSHER;
    pinned.writer_cpu = 0;
    pinned.flusher_cpu = 4096;
    CHECK(rtrec_recorder_create(dir, &pinned, &rec) == 0);
    CHECK(rtrec_recorder_finish(rec, &w) == 0);
    CHECK(w.filled == 1 && w.warnings == 1 && warnings_logged == 2);
    free(w.file_names);
    pinned.writer_cpu = 4096;
    pinned.flusher_cpu = 0;
    CHECK(rtrec_set_log(NULL, NULL) == 0);
    /* A CPU without its flag is refused, not pinned to by accident. */
    pinned.pin = 0;
    CHECK(rtrec_recorder_create(dir, &pinned, &rec) == -EINVAL);

    /* A zero-filled config (struct_size set) records with the defaults. */
    rtrec_config zero = { .struct_size = sizeof zero };
    zero.max_record = 4096;
    zero.writer_poll_us = 500;
    zero.ring_bytes = 1u << 16;
    zero.file_size = 1u << 20;
    CHECK(rtrec_recorder_create(dir, &zero, &rec) == 0);
    rtrec_summary z = { .struct_size = sizeof z };
    CHECK(rtrec_recorder_finish(rec, &z) == 0);
    /* Its one file from the pool, or fallocated and counted when no pool
       file of 1 MiB was ready (none is prepared before a first record). */
    CHECK(z.filled == 1 && z.warnings == 0 && z.pool_taken + z.pool_fallbacks == 1);
    free(z.file_names);

    /* A layout (struct version 8, library 0.4): rtrec_layout_size()
     * checks a spec; the recorder stores it in its canonical form, and a
     * record of another size is still recorded. */
    CHECK(rtrec_layout_size("t:u32,x:f32,y:f32") == 12);
    CHECK(rtrec_layout_size("<Iff") == 12);
    CHECK(rtrec_layout_size("t:u33") == -EINVAL && strstr(rtrec_last_error(), "u33") != NULL);
    CHECK(rtrec_layout_size(NULL) == -EINVAL);
    rtrec_config laid = small();
    laid.layout = "t:u33";
    int files_before = visible_entries(dir);
    CHECK(rtrec_recorder_create(dir, &laid, &rec) == -EINVAL);
    CHECK(strstr(rtrec_last_error(), "rtrec_config.layout") != NULL);
    CHECK(visible_entries(dir) == files_before);
    laid.layout = "<Iff";
    CHECK(rtrec_recorder_create(dir, &laid, &rec) == 0);
    unsigned char r12[12] = { 0 };
    CHECK(rtrec_recorder_record(rec, r12, sizeof r12) == 0);
    CHECK(rtrec_recorder_record(rec, r12, 8) == 0);
    rtrec_summary l = { .struct_size = sizeof l };
    CHECK(rtrec_recorder_finish(rec, &l) == 0);
    CHECK(l.records_written == 2 && l.records_dropped == 0 && l.layout_misfits == 1);
    free(l.file_names);

    if (failures == 0)
        printf("ok\n");
    return failures != 0;
}

/*
 * fork.c: a recorder across fork(). The parent creates a recorder in
 * DIRECTORY/parent and records 100 records, then forks. In the child the
 * parent's recorder gives -ECHILD to record, trigger and finish (with the
 * sentence in rtrec_last_error()), the handle is then dead (-EBADF), and a
 * recorder the child creates itself in DIRECTORY/child records and
 * finishes. The parent records 100 more records after the child has
 * exited and finishes: 200 records, complete. Run by
 * crates/ffi/tests/c_misuse.rs, which then verifies both directories.
 * Prints "ok" and exits 0, or says what failed and exits 1.
 *
 * Usage: fork DIRECTORY (with the subdirectories parent/ and child/)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtrec.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("line %d: %s (%s)\n", __LINE__, #cond, rtrec_last_error());       \
            fflush(stdout);                                                          \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static char buf[64];

/* Records n records of 64 bytes; returns the first non-zero result. */
static int record(rtrec_recorder *rec, int n)
{
    for (int i = 0; i < n; i++) {
        int ret = rtrec_recorder_record(rec, buf, sizeof buf);
        if (ret != 0)
            return ret;
    }
    return 0;
}

static int create(const char *dir, rtrec_recorder **rec)
{
    rtrec_config cfg = { .struct_size = sizeof cfg };
    cfg.max_record = 64;
    cfg.file_size = 1u << 20;
    return rtrec_recorder_create(dir, &cfg, rec);
}

/* What the child does with its parent's recorder, and with its own. */
static int child(rtrec_recorder *parents, const char *own_dir)
{
    CHECK(rtrec_recorder_record(parents, buf, sizeof buf) == -ECHILD);
    CHECK(rtrec_recorder_trigger(parents) == -ECHILD);
    rtrec_summary s = { .struct_size = sizeof s };
    CHECK(rtrec_recorder_finish(parents, &s) == -ECHILD);
    CHECK(strstr(rtrec_last_error(), "created in the parent process") != NULL);
    CHECK(strstr(rtrec_last_error(), "create a new recorder in the child") != NULL);
    CHECK(s.filled == 0 && s.records_written == 0);
    /* Forgotten: the handle is dead in the child. */
    CHECK(rtrec_recorder_finish(parents, NULL) == -EBADF);
    CHECK(rtrec_recorder_destroy(parents) == -EBADF);
    CHECK(rtrec_recorder_record(parents, buf, sizeof buf) == -EBADF);

    rtrec_recorder *own = NULL;
    CHECK(create(own_dir, &own) == 0);
    CHECK(record(own, 50) == 0);
    rtrec_summary o = { .struct_size = sizeof o };
    CHECK(rtrec_recorder_finish(own, &o) == 0);
    CHECK(o.records_written == 50 && o.complete == 1);
    free(o.file_names);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    char parent_dir[4096], child_dir[4096];
    snprintf(parent_dir, sizeof parent_dir, "%s/parent", argv[1]);
    snprintf(child_dir, sizeof child_dir, "%s/child", argv[1]);
    memset(buf, 7, sizeof buf);

    rtrec_recorder *rec = NULL;
    CHECK(create(parent_dir, &rec) == 0);
    CHECK(record(rec, 100) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child(rec, child_dir));
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CHECK(record(rec, 100) == 0);
    rtrec_summary s = { .struct_size = sizeof s };
    CHECK(rtrec_recorder_finish(rec, &s) == 0);
    CHECK(s.records_written == 200 && s.records_dropped == 0 && s.complete == 1);
    free(s.file_names);
    printf("ok\n");
    return 0;
}

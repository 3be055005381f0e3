/*
 * recover.c: rtrec_dir_recover() as a C program at start-up meets it. A child
 * process records 200 records and is killed with SIGKILL in the middle of
 * its recording; rtrec_dir_recover() then closes that recording (one closed,
 * its dead name claim removed, its unused pre-allocation given back), a
 * second call changes nothing, and a call beside a live recorder of this
 * process leaves that recording alone. Run by crates/ffi/tests/c_misuse.rs,
 * which then verifies the directory. Prints "ok" and exits 0, or says
 * what failed and exits 1.
 *
 * Usage: recover DIRECTORY
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtrec.h"

static const char *dir;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("line %d: %s (%s)\n", __LINE__, #cond, rtrec_last_error());       \
            return 1;                                                                \
        }                                                                            \
    } while (0)

/* Creates a recorder of 1 MiB files in dir and records n records of 64 bytes. */
static int record(rtrec_recorder **rec, int n)
{
    rtrec_config cfg = { .struct_size = sizeof cfg };
    cfg.max_record = 64;
    cfg.file_size = 1u << 20;
    cfg.alloc = RTREC_ALLOC_FALLOCATE;
    int ret = rtrec_recorder_create(dir, &cfg, rec);
    if (ret != 0)
        return ret;
    char buf[64];
    memset(buf, 7, sizeof buf);
    for (int i = 0; i < n; i++)
        rtrec_recorder_record(*rec, buf, sizeof buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        rtrec_recorder *rec = NULL;
        if (record(&rec, 200) != 0)
            _exit(3);
        /* Give the writer time to write, then die as a power cut's kill. */
        usleep(200 * 1000);
        kill(getpid(), SIGKILL);
        _exit(4);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    rtrec_recover_report rep = { .struct_size = sizeof rep };
    CHECK(rtrec_dir_recover(dir, &rep) == 0);
    CHECK(rep.struct_size == sizeof rep);
    CHECK(rep.closed == 1);
    CHECK(rep.claims_removed == 1);
    CHECK(rep.bytes_given_back > 0);
    CHECK(rep.live_files == 0);

    /* Idempotent: nothing more to do; out may be NULL. */
    CHECK(rtrec_dir_recover(dir, NULL) == 0);
    memset(&rep, 0xff, sizeof rep);
    rep.struct_size = sizeof rep;
    CHECK(rtrec_dir_recover(dir, &rep) == 0);
    CHECK(rep.closed == 0 && rep.claims_removed == 0 && rep.bytes_given_back == 0);

    /* Beside a live recorder: its recording is left alone. */
    rtrec_recorder *live = NULL;
    CHECK(record(&live, 10) == 0);
    CHECK(rtrec_dir_recover(dir, &rep) == 0);
    CHECK(rep.closed == 0 && rep.live_files == 1 && rep.claims_removed == 0);
    rtrec_summary s = { .struct_size = sizeof s };
    CHECK(rtrec_recorder_finish(live, &s) == 0);

    /* A garbage struct_size is refused before anything is done. */
    rep.struct_size = 3;
    CHECK(rtrec_dir_recover(dir, &rep) == -22);
    printf("ok\n");
    return 0;
}

/* Discovery: what the registry makes of directories and files it is pointed
 * at. Junk never crashes the scan and each file gets a reason; order is
 * deterministic; a file reached twice loads once; PLEXUS_BACKEND_PATH and
 * PLEXUS_BACKENDS are honoured unless the application says otherwise
 * (docs/backend-abi.md, "Discovery"). Scratch directories are made under
 * /tmp per test. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "test_util.h"

static char tmp[PATH_MAX];

static void make_tmp(void) {
    tu_mkdtemp(tmp);
}

static void remove_tmp(void) {
    tu_rmtree(tmp);
}

TestSuite(discovery, .init = make_tmp, .fini = remove_tmp);

/* The rejection of tmp/<name>, by the path the scan saw (resolved when it
 * resolves); asserts that there is one and returns its reason. */
static const char *reason_for(const plx_runtime *rt, const char *name) {
    char path[PATH_MAX];
    tu_join(path, tmp, name);
    const plx_rejection *r = tu_rejection_at(rt, path);
    if (!r) {
        cr_fatal("no rejection recorded for %s\n%s", path, tu_dump(rt));
    }
    cr_assert(not(zero(ptr, (void *)r->reason)));
    cr_assert(zero(ptr, (void *)r->id), "%s: an id for a file that is no backend", name);
    return r->reason;
}

static void assert_prefix(const char *text, const char *prefix) {
    cr_assert(eq(int, strncmp(text, prefix, strlen(prefix)), 0), "'%s' does not start with '%s'",
              text, prefix);
}

/* Junk in a plug-in directory: each file is refused with its reason, names
 * that are not shared-library names are ignored silently, and the good
 * plug-in beside them loads. */
Test(discovery, junk_directory) {
    static const char text[] = "this is not an ELF file\n";
    char real[PATH_MAX];
    tu_write_file(tmp, "x.so", text, sizeof text - 1, 0644);
    tu_write_file(tmp, "y.so", "", 0, 0644);
    tu_write_file(tmp, "w.so.1.2", text, sizeof text - 1, 0644);
    tu_write_file(tmp, "readme.txt", text, sizeof text - 1, 0644);
    tu_write_file(tmp, "a.so.x", text, sizeof text - 1, 0644);
    tu_write_file(tmp, "libfoo.so.", text, sizeof text - 1, 0644);
    char sub[PATH_MAX];
    cr_assert(eq(int, mkdir(tu_join(sub, tmp, "z.so"), 0755), 0));
    tu_symlink("/nonexistent/plexus-test/target.so", tmp, "broken.so");
    tu_symlink("loop2.so", tmp, "loop.so");
    tu_symlink("loop.so", tmp, "loop2.so");
    tu_copy_file(tu_fake_path(real, "fake_not_backend"), tmp, "notplexus.so");
    tu_copy_file(tu_fake_path(real, "fake_good"), tmp, "good.so");

    const char *paths[] = {tmp};
    plx_runtime *rt = tu_runtime(paths, 1);

    assert_prefix(reason_for(rt, "x.so"), "dlopen failed: ");
    cr_assert(not(eq(str, (char *)reason_for(rt, "x.so"), "dlopen failed: ")));
    assert_prefix(reason_for(rt, "y.so"), "dlopen failed: ");
    /* .so.N[.N...] names are shared libraries too. */
    assert_prefix(reason_for(rt, "w.so.1.2"), "dlopen failed: ");
    cr_assert(eq(str, (char *)reason_for(rt, "z.so"), "not a regular file"));
    cr_assert(eq(str, (char *)reason_for(rt, "broken.so"), "broken symbolic link"));
    cr_assert(eq(str, (char *)reason_for(rt, "loop.so"), "symbolic link loop"));
    cr_assert(eq(str, (char *)reason_for(rt, "loop2.so"), "symbolic link loop"));
    cr_assert(eq(str, (char *)reason_for(rt, "notplexus.so"),
                 "no entry point 'plx_backend_entry' in shared library"));

    /* Other names are not candidates, so not rejections. */
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, tu_join(real, tmp, "readme.txt"))));
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, tu_join(real, tmp, "a.so.x"))));
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, tu_join(real, tmp, "libfoo.so."))));
    size_t rejections = plx_runtime_rejection_count(rt);
    cr_assert(eq(sz, rejections, 8), "%s", tu_dump(rt));

    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_good");
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(b->available);
    cr_assert(eq(str, (char *)b->path, (char *)tu_join(real, tmp, "good.so")));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    cr_assert(eq(str, (char *)plx_runtime_search_path(rt, 0)->problem, ""));
    plx_runtime_destroy(&rt);
}

/* A FIFO is not a regular file: the scan must say so rather than open it
 * (opening a FIFO for reading blocks until a writer comes). */
Test(discovery, fifo_is_not_a_regular_file, .timeout = 30) {
    char path[PATH_MAX];
    cr_assert(eq(int, mkfifo(tu_join(path, tmp, "fifo.so"), 0644), 0));
    const char *paths[] = {tmp};
    plx_runtime *rt = tu_runtime(paths, 1);
    cr_assert(eq(str, (char *)reason_for(rt, "fifo.so"), "not a regular file"));
    plx_runtime_destroy(&rt);
}

/* Runs the scan of tmp in a process that cannot read mode-000 files and
 * writes the reason recorded for u.so to `fd`; the exit status says whether
 * the good plug-in beside it loaded (0) or what went wrong. */
static int scan_unreadable(int fd) {
    const char *paths[] = {tmp};
    plx_runtime_options o;
    tu_options(&o);
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_runtime *rt = NULL;
    plx_status st = plx_runtime_create(&o, &rt);
    if (st) {
        plx_status_free(st);
        return 10;
    }
    char path[PATH_MAX];
    const plx_rejection *r = tu_rejection_at(rt, tu_join(path, tmp, "u.so"));
    const char *reason = r && r->reason ? r->reason : "(no rejection for u.so)";
    size_t len = strlen(reason);
    int rc = write(fd, reason, len) == (ssize_t)len ? 0 : 11;
    if (rc == 0 && !plx_runtime_find_backend(rt, "fake_zulu")) {
        rc = 12;
    }
    plx_runtime_destroy(&rt);
    return rc;
}

/* An unreadable file is refused with the OS's reason. Root reads anything,
 * so as root the scan runs in a child that has dropped to nobody. */
Test(discovery, unreadable_file) {
    char src[PATH_MAX];
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "u.so");
    char path[PATH_MAX];
    cr_assert(eq(int, chmod(tu_join(path, tmp, "u.so"), 0), 0));
    tu_copy_file(tu_fake_path(src, "fake_first"), tmp, "readable.so");

    int fds[2];
    cr_assert(eq(int, pipe(fds), 0));
    pid_t pid = fork();
    cr_assert(ge(int, pid, 0));
    if (pid == 0) {
        close(fds[0]);
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
            _exit(20);
        }
        if (access(path, R_OK) == 0) {
            _exit(21); /* still able to read it: the test would prove nothing */
        }
        _exit(scan_unreadable(fds[1]));
    }
    close(fds[1]);
    char reason[1024];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof reason - 1 && (n = read(fds[0], reason + got, sizeof reason - 1 - got)) > 0) {
        got += (size_t)n;
    }
    reason[got] = '\0';
    close(fds[0]);
    int status = 0;
    cr_assert(eq(int, waitpid(pid, &status, 0), pid));
    cr_assert(eq(int, WIFEXITED(status) ? 1 : 0, 1), "the scanning child died (status %d)", status);
    int code = WEXITSTATUS(status);
    cr_assert(not(eq(int, code, 20)), "could not drop privileges to uid 65534");
    cr_assert(not(eq(int, code, 21)), "uid %d can still read a mode-000 file", (int)geteuid());
    cr_assert(not(eq(int, code, 10)), "plx_runtime_create failed in the child");
    cr_assert(eq(str, reason, "not readable: Permission denied"));
    cr_assert(not(eq(int, code, 12)), "the readable plug-in beside it did not load");
    cr_assert(eq(int, code, 0));
}

/* A file named explicitly as a search path is loaded whatever its name. */
Test(discovery, explicit_file_any_name) {
    char src[PATH_MAX], file[PATH_MAX], real[PATH_MAX];
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "plugin.bin");
    tu_join(file, tmp, "plugin.bin");
    const char *paths[] = {file};
    plx_runtime *rt = tu_runtime(paths, 1);
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_good");
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(realpath(file, real) != NULL);
    cr_assert(eq(str, (char *)b->path, real));
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 1));
    cr_assert(eq(str, (char *)plx_runtime_search_path(rt, 0)->path, file));
    cr_assert(eq(str, (char *)plx_runtime_search_path(rt, 0)->problem, ""));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* ... and an explicit file that is not a library is refused, not ignored. */
Test(discovery, explicit_file_not_a_library) {
    static const char text[] = "plain text\n";
    char file[PATH_MAX];
    tu_write_file(tmp, "notes.txt", text, sizeof text - 1, 0644);
    tu_join(file, tmp, "notes.txt");
    const char *paths[] = {file};
    plx_runtime *rt = tu_runtime(paths, 1);
    assert_prefix(reason_for(rt, "notes.txt"), "dlopen failed: ");
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* A search path that does not exist is a problem of its entry, not a
 * rejection and not an error. */
Test(discovery, missing_search_path) {
    char missing[PATH_MAX];
    tu_join(missing, tmp, "no-such-dir");
    const char *paths[] = {missing, FAKE_PLUGIN_DIR};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 2));
    const plx_search_entry *e = plx_runtime_search_path(rt, 0);
    cr_assert(eq(str, (char *)e->path, missing));
    cr_assert(eq(str, (char *)e->problem, "does not exist"));
    cr_assert(eq(int, (int)e->source, (int)PLX_SEARCH_SOURCE_APPLICATION));
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, missing)));
    cr_assert(eq(str, (char *)plx_runtime_search_path(rt, 1)->problem, ""));
    cr_assert(zero(ptr, (void *)plx_runtime_search_path(rt, 2)));
    tu_assert_good_fakes_loaded(rt);
    plx_runtime_destroy(&rt);
}

/* Backends of one directory come in strcmp order of their file names, not
 * in readdir order, id order or locale order. */
Test(discovery, sorted_by_file_name) {
    char src[PATH_MAX];
    /* Created in reverse order; strcmp puts "B.so" before "a.so". */
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "b.so");
    tu_copy_file(tu_fake_path(src, "fake_unavailable"), tmp, "a.so");
    tu_copy_file(tu_fake_path(src, "fake_first"), tmp, "B.so");
    const char *paths[] = {tmp};
    plx_runtime *rt = tu_runtime(paths, 1);
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 3));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_zulu"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 1)->id, "fake_unavailable"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 2)->id, "fake_good"));
    plx_runtime_destroy(&rt);
}

/* Search entries are taken in order: the first directory's backends come
 * first, whatever their names. */
Test(discovery, search_order_across_entries) {
    char a[PATH_MAX], b[PATH_MAX];
    tu_join(a, tmp, "a");
    tu_join(b, tmp, "b");
    cr_assert(eq(int, mkdir(a, 0755), 0));
    cr_assert(eq(int, mkdir(b, 0755), 0));
    tu_link_fake(a, "fake_good", "zz.so");
    tu_link_fake(b, "fake_first", "aa.so");
    const char *paths[] = {a, b};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 2));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_good"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 1)->id, "fake_zulu"));
    plx_runtime_destroy(&rt);
}

/* The same file reached twice loads once, without a duplicate-id rejection:
 * the same directory listed twice ... */
Test(discovery, same_directory_twice) {
    tu_link_fake(tmp, "fake_good", "fake_good.so");
    const char *paths[] = {tmp, tmp};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, tu_backend_id_count(rt, "fake_good"), 1));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

/* ... a symbolic link to a loaded file in another directory ... */
Test(discovery, symlink_to_loaded_file) {
    char a[PATH_MAX], b[PATH_MAX];
    tu_join(a, tmp, "a");
    tu_join(b, tmp, "b");
    cr_assert(eq(int, mkdir(a, 0755), 0));
    cr_assert(eq(int, mkdir(b, 0755), 0));
    tu_link_fake(a, "fake_good", "fake_good.so");
    tu_link_fake(b, "fake_good", "other_name.so");
    const char *paths[] = {a, b};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, tu_backend_id_count(rt, "fake_good"), 1));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

/* ... and a file given explicitly that the directory scan also finds. */
Test(discovery, explicit_file_and_its_directory) {
    char file[PATH_MAX];
    tu_fake_path(file, "fake_good");
    const char *paths[] = {file, FAKE_PLUGIN_DIR};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, tu_backend_id_count(rt, "fake_good"), 1));
    cr_assert(eq(sz, tu_backend_index(rt, "fake_good"), 0));
    char real[PATH_MAX];
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, tu_fake_realpath(real, "fake_good"))));
    /* fake_good_dup.so is another file with the same id: that one is a duplicate. */
    cr_assert(eq(str, (char *)tu_fake_rejection(rt, "fake_good_dup")->id, "fake_good"));
    plx_runtime_destroy(&rt);
}

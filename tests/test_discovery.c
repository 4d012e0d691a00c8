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

#include <elf.h>

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

    /* Checked before dlopen (docs/backend-abi.md, "Loading one file"). */
    cr_assert(eq(str, (char *)reason_for(rt, "x.so"),
                 "not an ELF file (24 bytes, no ELF magic number)"));
    cr_assert(eq(str, (char *)reason_for(rt, "y.so"),
                 "not an ELF file (0 bytes, no ELF magic number)"));
    /* .so.N[.N...] names are shared libraries too. */
    cr_assert(eq(str, (char *)reason_for(rt, "w.so.1.2"),
                 "not an ELF file (24 bytes, no ELF magic number)"));
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
    cr_assert(eq(str, (char *)reason_for(rt, "notes.txt"),
                 "not an ELF file (11 bytes, no ELF magic number)"));
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

/* ---- plug-in files checked before dlopen ---------------------------------- */

/* fake_good.so's bytes (malloc'd) and size; asserts. */
static unsigned char *fake_good_bytes(size_t *size) {
    char src[PATH_MAX];
    FILE *f = fopen(tu_fake_path(src, "fake_good"), "rb");
    cr_assert(not(zero(ptr, f)));
    cr_assert(eq(int, fseek(f, 0, SEEK_END), 0));
    long n = ftell(f);
    cr_assert(gt(long, n, (long)sizeof(Elf64_Ehdr)));
    rewind(f);
    unsigned char *b = malloc((size_t)n);
    cr_assert(not(zero(ptr, b)));
    cr_assert(eq(sz, fread(b, 1, (size_t)n, f), (size_t)n));
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* A scan of tmp holding `name` (the bytes given) beside a good plug-in:
 * returns the reason `name` is rejected for (copied into reason), and
 * asserts that the good plug-in still loads. */
static void scan_with(const char *name, const void *bytes, size_t size, char *reason,
                      size_t reason_size) {
    char src[PATH_MAX];
    tu_write_file(tmp, name, bytes, size, 0644);
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "good.so");
    const char *paths[] = {tmp};
    plx_runtime *rt = tu_runtime(paths, 1);
    snprintf(reason, reason_size, "%s", reason_for(rt, name));
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))), "%s",
              tu_dump(rt));
    plx_runtime_destroy(&rt);
}

/* A partly copied plug-in (its first 4 KiB: an upgrade or a `cp` in
 * progress) maps segments past its end, where dlopen would raise SIGBUS:
 * it is rejected from its program headers, and so are shorter stumps. */
Test(discovery, truncated_plugin, .timeout = 30) {
    size_t size;
    unsigned char *b = fake_good_bytes(&size);
    cr_assert(gt(sz, size, 4096));
    char reason[512];
    scan_with("cut4k.so", b, 4096, reason, sizeof reason);
    assert_prefix(reason, "truncated: loadable segment ");
    cr_assert(not(zero(ptr, strstr(reason, "of a 4096-byte file"))), "%s", reason);

    const Elf64_Ehdr *eh = (const void *)b;
    size_t table_end = (size_t)eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr);
    char want[256];
    snprintf(want, sizeof want,
             "truncated: the program headers end at byte %zu of a %zu-byte file", table_end,
             table_end - 1);
    scan_with("cut_phdrs.so", b, table_end - 1, reason, sizeof reason);
    cr_assert(eq(str, reason, want));

    scan_with("cut_header.so", b, 40, reason, sizeof reason);
    cr_assert(eq(str, reason, "truncated: the ELF header needs 64 bytes, the file has 40"));
    free(b);
}

/* Headers that are whole but say the file is not for this host, or not a
 * shared library, each with its reason. */
Test(discovery, foreign_or_wrong_kind_of_elf_file, .timeout = 30) {
    size_t size;
    unsigned char *b = fake_good_bytes(&size);
    unsigned char *copy = malloc(size);
    cr_assert(not(zero(ptr, copy)));
    char reason[512];

    memcpy(copy, b, size);
    Elf64_Ehdr *eh = (void *)copy;
    eh->e_machine = EM_SPARCV9; /* never this test's host */
    scan_with("sparc.so", copy, size, reason, sizeof reason);
    assert_prefix(reason, "built for sparc64, this host is ");

    memcpy(copy, b, size);
    eh->e_machine = 0x7ff0; /* no name known for it */
    scan_with("odd_machine.so", copy, size, reason, sizeof reason);
    assert_prefix(reason, "built for ELF machine 32752, this host is ");

    memcpy(copy, b, size);
    copy[EI_CLASS] = ELFCLASS32;
    scan_with("class32.so", copy, size, reason, sizeof reason);
    cr_assert(eq(str, reason, "built for a 32-bit host, this one is 64-bit"));

    memcpy(copy, b, size);
    copy[EI_DATA] = ELFDATA2MSB;
    scan_with("big_endian.so", copy, size, reason, sizeof reason);
    cr_assert(eq(str, reason, "built for a big-endian host, this one is little-endian"));

    memcpy(copy, b, size);
    eh->e_type = ET_REL;
    scan_with("object.so", copy, size, reason, sizeof reason);
    cr_assert(eq(str, reason, "not a shared object (ELF type relocatable object)"));

    /* the dynamic segment's header made a null one */
    memcpy(copy, b, size);
    Elf64_Phdr *ph = (void *)(copy + eh->e_phoff);
    bool found = false;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_DYNAMIC) {
            ph[i].p_type = PT_NULL;
            found = true;
        }
    }
    cr_assert(found);
    scan_with("no_dynamic.so", copy, size, reason, sizeof reason);
    cr_assert(eq(str, reason, "not a shared library: no dynamic section"));

    /* a loadable segment that claims more file bytes than memory */
    memcpy(copy, b, size);
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD) {
            ph[i].p_memsz = ph[i].p_filesz - 1;
            break;
        }
    }
    scan_with("filesz.so", copy, size, reason, sizeof reason);
    assert_prefix(reason, "malformed ELF file: loadable segment ");

    memcpy(copy, b, size);
    eh->e_phentsize = 7;
    scan_with("phentsize.so", copy, size, reason, sizeof reason);
    assert_prefix(reason, "malformed ELF header: ");
    free(copy);
    free(b);
}

/* A directory listed many times: each junk file there is rejected once
 * (it was once per listing), and the scan stays fast. */
Test(discovery, repeated_entries_judge_a_file_once) {
    static const char text[] = "not a library\n";
    char src[PATH_MAX];
    tu_write_file(tmp, "junk.so", text, sizeof text - 1, 0644);
    cr_assert(eq(int, mkdir(tu_join(src, tmp, "sub.so"), 0755), 0));
    tu_symlink("/nonexistent/plexus-test/target.so", tmp, "broken.so");
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "good.so");
    enum { REPEATS = 500 };
    const char *paths[REPEATS];
    for (size_t i = 0; i < REPEATS; i++) {
        paths[i] = tmp;
    }
    plx_runtime *rt = tu_runtime(paths, REPEATS);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 3), "%s", tu_dump(rt));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    plx_runtime_destroy(&rt);
}

/* A plug-in that others can replace is loaded, with a note that says who
 * can (a setuid or setgid process refuses it instead: docs/backend-abi.md). */
Test(discovery, writable_by_others_is_noted) {
    char src[PATH_MAX], path[PATH_MAX];
    tu_copy_file(tu_fake_path(src, "fake_good"), tmp, "good.so");
    cr_assert(eq(int, chmod(tu_join(path, tmp, "good.so"), 0666), 0));
    const char *paths[] = {tmp};
    plx_runtime *rt = tu_runtime(paths, 1);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))));
    cr_assert(tu_has_note(rt, "good.so: the file is world-writable: whoever can write it runs "
                              "code in this process"),
              "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);

    cr_assert(eq(int, chmod(path, 0644), 0));
    cr_assert(eq(int, chmod(tmp, 01777), 0));
    rt = tu_runtime(paths, 1);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))));
    cr_assert(tu_has_note(rt, "good.so: its directory is world-writable"), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);

    cr_assert(eq(int, chmod(tmp, 0755), 0));
    rt = tu_runtime(paths, 1);
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

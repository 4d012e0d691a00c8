/* The checks a plug-in file passes before dlopen (elf_check.h).
 *
 * glibc's loader maps every loadable segment of a shared object at the file
 * offset its program header gives, trusting the header: a segment that lies
 * beyond the end of a truncated file (a partial copy, an upgrade in
 * progress) maps pages that have no file behind them, and the first touch
 * of one raises SIGBUS inside dlopen. The header and the program headers
 * are read here with plain reads, so nothing is mapped until they are
 * known to fit the file. */
#include "elf_check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if UINTPTR_MAX > 0xffffffffu
#define HOST_CLASS ELFCLASS64
typedef Elf64_Ehdr host_ehdr;
typedef Elf64_Phdr host_phdr;
#else
#define HOST_CLASS ELFCLASS32
typedef Elf32_Ehdr host_ehdr;
typedef Elf32_Phdr host_phdr;
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

/* The host's e_machine; 0 where this file does not know it (the check is
 * then left to the loader). */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__) || defined(__powerpc__)
#define HOST_MACHINE (sizeof(void *) == 8 ? EM_PPC64 : EM_PPC)
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#elif defined(__loongarch__)
#define HOST_MACHINE EM_LOONGARCH
#else
#define HOST_MACHINE 0
#endif

/* The most program headers read; real shared objects have about ten. */
#define MAX_PHDRS 4096

static const char *machine_name(unsigned m) {
    switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_PPC: return "ppc";
    case EM_S390: return "s390";
    case EM_LOONGARCH: return "loongarch";
    case EM_MIPS: return "mips";
    case EM_SPARCV9: return "sparc64";
    default: return NULL;
    }
}

static bool fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return false;
}

/* Reads exactly n bytes at off; false on a short read or an error. */
static bool read_at(int fd, void *buf, size_t n, off_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

static bool check_fd(int fd, uint64_t size, char *why, size_t why_size) {
    unsigned char ident[EI_NIDENT];
    if (size < EI_NIDENT || !read_at(fd, ident, sizeof ident, 0) ||
        memcmp(ident, ELFMAG, SELFMAG) != 0) {
        return fail(why, why_size, "not an ELF file (%llu bytes, no ELF magic number)",
                    (unsigned long long)size);
    }
    if (ident[EI_CLASS] != HOST_CLASS) {
        return fail(why, why_size, "built for a %s host, this one is %s",
                    ident[EI_CLASS] == ELFCLASS32   ? "32-bit"
                    : ident[EI_CLASS] == ELFCLASS64 ? "64-bit"
                                                    : "unknown-class",
                    HOST_CLASS == ELFCLASS64 ? "64-bit" : "32-bit");
    }
    if (ident[EI_DATA] != HOST_DATA) {
        return fail(why, why_size, "built for a %s host, this one is %s",
                    ident[EI_DATA] == ELFDATA2MSB   ? "big-endian"
                    : ident[EI_DATA] == ELFDATA2LSB ? "little-endian"
                                                    : "unknown byte order",
                    HOST_DATA == ELFDATA2LSB ? "little-endian" : "big-endian");
    }
    host_ehdr eh;
    if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0)) {
        return fail(why, why_size, "truncated: the ELF header needs %zu bytes, the file has %llu",
                    sizeof eh, (unsigned long long)size);
    }
    if (eh.e_type != ET_DYN) {
        return fail(why, why_size, "not a shared object (ELF type %s)",
                    eh.e_type == ET_EXEC  ? "executable"
                    : eh.e_type == ET_REL ? "relocatable object"
                    : eh.e_type == ET_CORE ? "core dump"
                                            : "unknown");
    }
    unsigned host = HOST_MACHINE;
    if (host && eh.e_machine != host) {
        const char *name = machine_name(eh.e_machine);
        if (name) {
            return fail(why, why_size, "built for %s, this host is %s", name,
                        machine_name(host));
        }
        return fail(why, why_size, "built for ELF machine %u, this host is %s",
                    (unsigned)eh.e_machine, machine_name(host));
    }
    if (eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS || eh.e_phentsize != sizeof(host_phdr)) {
        return fail(why, why_size,
                    "malformed ELF header: %u program headers of %u bytes (expected 1 to %d of "
                    "%zu)",
                    (unsigned)eh.e_phnum, (unsigned)eh.e_phentsize, MAX_PHDRS,
                    sizeof(host_phdr));
    }
    uint64_t table = (uint64_t)eh.e_phnum * sizeof(host_phdr);
    if (eh.e_phoff > size || table > size - eh.e_phoff) {
        return fail(why, why_size,
                    "truncated: the program headers end at byte %llu of a %llu-byte file",
                    (unsigned long long)eh.e_phoff + (unsigned long long)table,
                    (unsigned long long)size);
    }
    bool dynamic = false;
    size_t loads = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        host_phdr ph;
        if (!read_at(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph))) {
            return fail(why, why_size, "cannot read program header %u: %s", i,
                        errno ? strerror(errno) : "short read");
        }
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) {
            continue;
        }
        uint64_t off = ph.p_offset, len = ph.p_filesz;
        if (off > size || len > size - off) {
            return fail(why, why_size,
                        "truncated: %s segment %u ends at byte %llu of a %llu-byte file",
                        ph.p_type == PT_LOAD ? "loadable" : "dynamic", i,
                        (unsigned long long)off + (unsigned long long)len,
                        (unsigned long long)size);
        }
        if (ph.p_type == PT_LOAD) {
            loads++;
            if (ph.p_filesz > ph.p_memsz) {
                return fail(why, why_size,
                            "malformed ELF file: loadable segment %u holds %llu bytes of the file "
                            "in %llu bytes of memory",
                            i, (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_memsz);
            }
        } else {
            dynamic = true;
        }
    }
    if (!loads) {
        return fail(why, why_size, "malformed ELF file: no loadable segment");
    }
    if (!dynamic) {
        return fail(why, why_size, "not a shared library: no dynamic section");
    }
    return true;
}

bool plxi_elf_check(const char *path, char *why, size_t why_size) {
    /* O_NONBLOCK: a FIFO put in place after the caller's stat must not
     * block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return fail(why, why_size, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    bool ok;
    if (fstat(fd, &st) != 0) {
        ok = fail(why, why_size, "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        ok = fail(why, why_size, "not a regular file");
    } else {
        errno = 0;
        ok = check_fd(fd, (uint64_t)st.st_size, why, why_size);
    }
    close(fd);
    return ok;
}

/* The checks a plug-in file passes before the host dlopens it
 * (docs/backend-abi.md, "Loading one file", step 0). */
#ifndef PLEXUS_CORE_ELF_CHECK_H
#define PLEXUS_CORE_ELF_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Reads the ELF header and program headers of the file at `path` and checks
 * that the dynamic loader can map it without touching a byte past its end:
 * an ELF file of this host's class, byte order and machine, a shared object,
 * 1 to 4,096 program headers inside the file, every loadable and dynamic
 * segment's file bytes inside the file, at least one loadable segment and a
 * dynamic segment. Opens with O_NONBLOCK and checks that the file is a
 * regular one before reading. True when the file passes; false with the
 * reason in why[0..why_size) (NUL-terminated, truncated to fit) otherwise.
 * Maps nothing and runs none of the file's code. */
bool plxi_elf_check(const char *path, char *why, size_t why_size);

#endif /* PLEXUS_CORE_ELF_CHECK_H */

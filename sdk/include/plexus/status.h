/* Plexus status values: the error type shared by the application API and the
 * backend ABI. Includes only standard headers. */
#ifndef PLEXUS_STATUS_H
#define PLEXUS_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. The numeric values are part of the ABI: never renumber,
 * only append. */
typedef enum plx_status_code {
    PLX_OK = 0,
    PLX_INVALID_ARGUMENT = 1,  /* a caller gave a bad value (option, path, id) */
    PLX_NOT_FOUND = 2,         /* a named thing does not exist */
    PLX_ALREADY_EXISTS = 3,    /* a unique name or id is taken */
    PLX_UNAVAILABLE = 4,       /* no usable device or resource right now */
    PLX_UNSUPPORTED = 5,       /* valid request the implementation does not do */
    PLX_OUT_OF_MEMORY = 6,     /* an allocation failed */
    PLX_INCOMPATIBLE = 7,      /* ABI or version mismatch */
    PLX_IO_ERROR = 8,          /* a file or OS call failed */
    PLX_FAILED_PRECONDITION = 9, /* the object is not in a state that allows the call */
    PLX_INTERNAL = 10          /* a bug: an invariant does not hold */
} plx_status_code;

/* A status is NULL on success. Otherwise it points to an object created by
 * the host (libplexus, or the host table's status_create for backends) that
 * carries a code and a message. Whoever receives a non-NULL status owns it
 * and releases it exactly once (plx_status_free in applications, the host
 * table's status_free in backends). Statuses are not tied to a runtime: they
 * may outlive the object that produced them and move between threads. */
typedef struct plx_status_object *plx_status;

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_STATUS_H */

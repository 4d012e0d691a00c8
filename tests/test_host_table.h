/* A host table (plexus/backend.h, plx_host) for tests that drive a
 * backend's functions, or a part of a backend, directly instead of through
 * a runtime: counted allocations, statuses carrying their code and
 * message, the log kept (and printed when PLEXUS_TEST_LOG is set), the
 * host's clock, and the profiling events a backend records, kept on
 * the host's clock. Criterion's assertions report a failed allocation of
 * its own. */
#ifndef PLEXUS_TESTS_TEST_HOST_TABLE_H
#define PLEXUS_TESTS_TEST_HOST_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <plexus/backend.h>

/* The statuses this table makes: tests read their code and message. */
struct plx_status_object {
    plx_status_code code;
    char message[1024];
};

/* The table: ABI 1.4's, with now_ns and record_event. */
extern const plx_host th_host;

/* Allocations made through the table and not freed yet, and all made. */
extern int th_live_allocations;
extern unsigned long th_allocation_count;

/* The last message logged at PLX_LOG_WARN or above, and how many were. */
extern char th_last_warning[1024];
extern unsigned th_warning_count;

/* One event record_event received, its start on the host's clock. */
typedef struct th_event {
    char name[64], category[32], layer[64];
    uint32_t network_id;
    uint64_t host_start_ns, duration_ns;
    uint64_t clock_sync_backend_ns; /* as given: 0 when start_ns was host time */
} th_event;
extern th_event th_events[256];
extern size_t th_event_count;

/* Forgets the events and warnings kept so far. */
void th_reset(void);

#endif /* PLEXUS_TESTS_TEST_HOST_TABLE_H */

// How many test cases run at once: as many as the cooperative pool has threads.
//
// Swift Testing 6.3 starts every test case of a run at once and lets the Swift runtime's
// cooperative pool (one thread per core: two here) run them. A synchronous test holds its
// thread until it returns, and a test's time limit counts from its start: a test waiting
// for a thread while two long synchronous ones held the pool timed out without having
// run (a two-minute limit under ThreadSanitizer, CI on 6bd5d75, after 213 s). Swift
// Testing admits at most `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH` test cases at a
// time and starts a case's time limit when it is admitted; with the width at the number
// of pool threads, an admitted case always has a thread, and its limit measures its own
// run. This constructor sets the width before Swift Testing reads it (at its first run,
// after every constructor), unless the environment sets it already. It is linked into
// every test process through the test support library.

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "TestProcess.h"

__attribute__((constructor)) static void sluice_limit_test_parallelism(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char width[32];
    snprintf(width, sizeof width, "%ld", cores > 1 ? cores : 2);
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}

int sluice_test_parallelism_width(void) {
    const char *width = getenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH");
    return width ? atoi(width) : 0;
}

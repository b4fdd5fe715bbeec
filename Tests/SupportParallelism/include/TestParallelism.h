#ifndef SLUICE_TEST_PARALLELISM_H
#define SLUICE_TEST_PARALLELISM_H

/// The number of test cases Swift Testing runs at once in this process (0 when unset).
int sluice_test_parallelism_width(void);

#endif

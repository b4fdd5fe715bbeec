#ifndef SLUICE_TEST_PROCESS_H
#define SLUICE_TEST_PROCESS_H

#include <spawn.h>

/// The number of test cases Swift Testing runs at once in this process (0 when unset).
int sluice_test_parallelism_width(void);

/// Closes every descriptor from `lowest` up in the spawned process (glibc's
/// `posix_spawn_file_actions_addclosefrom_np`); 0 on success.
int sluice_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif

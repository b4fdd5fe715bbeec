// File actions for the helpers a test process spawns itself (not through Foundation's
// Process, which closes the descriptors its children should not have).

#define _GNU_SOURCE
#include <spawn.h>
#include "TestProcess.h"

int sluice_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
#if defined(__linux__)
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
#else
    // Elsewhere the watchdog does not run (it reads /proc); Darwin would spawn with
    // POSIX_SPAWN_CLOEXEC_DEFAULT instead.
    (void)actions;
    (void)lowest;
    return 0;
#endif
}

/* The spawner's capabilities and its unprivileged steps (spawner-lockdown.c). */
#pragma once

extern const int spawner_caps[];
extern const unsigned spawner_n_caps;
/* Keep exactly spawner_caps (effective, permitted and bounding), set no_new_privs. */
int spawner_lockdown_apply(void);
/* In a forked step that needs no privilege, once what it needs is open: become user (all
 * capabilities gone), no_new_privs. 0 or -errno. */
int spawner_lockdown_drop_step(const char *user);

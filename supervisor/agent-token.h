/* Per-sandbox agent tokens and the agent_api mark of routes (agent-token.c). */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#define AGENT_TOKEN_LEN 64 /* hex characters: 32 random bytes */

void agent_token_set_api_uid(uid_t uid);
/* true when the sandbox's owner is the E2B control plane's user */
bool agent_token_api_route(const char *id);
int agent_token_get(const char *id, char out[AGENT_TOKEN_LEN + 1]);
void agent_token_remove(const char *id);

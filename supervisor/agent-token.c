/* Who may drive a sandbox's agent (warren-agent, E2B's envd API on port 49983) through the
 * gateway. The gateway routes by E2B's headers, so without a gate any local user who reaches it
 * could drive the agent of a sandbox that is not theirs. Two ways through, pushed with the route:
 * the sandbox belongs to the E2B control plane's user (--agent-api-user: that path keeps E2B's
 * own access-token model, set by the control plane in the agent), or the request carries the
 * sandbox's random agent token, which Sandbox.AgentToken (sandbox-dbus.c) hands to its creator and
 * root only. Tokens are kept in <state-dir>/agent-tokens/<id> (0600) so a restarted supervisor
 * re-adopts its sandboxes with the same token. Runs in warren-supervisor. */
#include "agent-token.h"
#include "fileio.h"
#include "log.h"
#include "logs.h"
#include "supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static uid_t agent_api_uid = (uid_t)-1; /* -1: no such user, no route is agent_api */

void
agent_token_set_api_uid(uid_t uid)
{
	agent_api_uid = uid;
}

bool
agent_token_api_route(const char *id)
{
	return agent_api_uid != (uid_t)-1 && agent_api_uid != 0 &&
	       logs_owner_get(id) == agent_api_uid;
}

static void
token_path(const char *id, char *path, size_t size)
{
	snprintf(path, size, "%s/agent-tokens/%s", sup->state_dir, id);
}

static bool
token_valid(const char *t)
{
	if (strlen(t) != AGENT_TOKEN_LEN)
		return false;
	for (; *t; t++)
		if (!((*t >= '0' && *t <= '9') || (*t >= 'a' && *t <= 'f')))
			return false;
	return true;
}

/* The sandbox's token, made on first use (its first route push, at create) and read back after
 * a restart. */
int
agent_token_get(const char *id, char out[AGENT_TOKEN_LEN + 1])
{
	char path[512];
	if (!sandbox_id_valid(id))
		return -EINVAL;
	token_path(id, path, sizeof path);
	if (file_read_line(path, out, AGENT_TOKEN_LEN + 1) >= 0 && token_valid(out))
		return 0;
	unsigned char raw[AGENT_TOKEN_LEN / 2];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -errno ? -errno : -EIO;
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	char dir[512];
	snprintf(dir, sizeof dir, "%s/agent-tokens", sup->state_dir);
	mkdir_p(dir, 0700);
	int r = file_write_atomic(path, out, AGENT_TOKEN_LEN, 0600, false);
	if (r < 0)
		return r;
	return 0;
}

void
agent_token_remove(const char *id)
{
	char path[512];
	if (!sandbox_id_valid(id))
		return;
	token_path(id, path, sizeof path);
	unlink(path);
}

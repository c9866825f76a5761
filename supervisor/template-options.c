/* Templates' environment, working directory and user (supervisor): the AddTemplate and
 * ImportTemplate options that set them, and what a spawn hands netnsd. Every string is checked
 * as every D-Bus string is (dbus-input.c ran first) and again by template_record_check before a
 * template is saved; netnsd checks them once more. */
#include "sandbox-egress.h"
#include "supervisor.h"
#include "template-record.h"

#include "warren/v1/netnsd.pb-c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "UID" or "UID:GID" (numbers: names were resolved against the image's /etc/passwd when it
 * was imported; the host's users mean nothing inside a sandbox). */
static int
parse_user(const char *s, uint32_t *uid, uint32_t *gid)
{
	char *end;
	/* digits first: strtoul would skip blanks and take a sign */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	unsigned long u = strtoul(s, &end, 10), g = u;
	if (*end == ':') {
		const char *gs = end + 1;
		if (*gs < '0' || *gs > '9')
			return -EINVAL;
		g = strtoul(gs, &end, 10);
	}
	if (*end || u > TEMPLATE_ID_MAX || g > TEMPLATE_ID_MAX)
		return -EINVAL;
	*uid = (uint32_t)u;
	*gid = (uint32_t)g;
	return 0;
}

int
template_option_read(sd_bus_message *m, const char *key, struct template *t, sd_bus_error *err)
{
	int r;
	if (!strcmp(key, "env")) {
		char **env = NULL;
		r = sd_bus_message_enter_container(m, 'v', "as");
		if (r >= 0)
			r = sd_bus_message_read_strv(m, &env);
		if (r >= 0)
			r = sd_bus_message_exit_container(m);
		if (r < 0)
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Option 'env' is a list of KEY=value strings");
		size_t n = 0;
		for (; env && env[n]; n++)
			if (!template_env_valid(env[n]) || n >= TEMPLATE_ENVC_MAX) {
				sd_bus_error_setf(
					err, ERR("InvalidArgument"),
					"Environment entry '%s' is not KEY=value, or there "
					"are more than %d",
					env[n], TEMPLATE_ENVC_MAX);
				for (size_t i = 0; env[i]; i++)
					free(env[i]);
				free(env);
				return -EINVAL;
			}
		for (size_t i = 0; i < t->envc; i++)
			free(t->env[i]);
		free(t->env);
		t->env = env;
		t->envc = n;
		return 1;
	}
	if (!strcmp(key, "cwd")) {
		const char *cwd;
		r = sd_bus_message_read(m, "v", "s", &cwd);
		if (r < 0 || cwd[0] != '/')
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Option 'cwd' is an absolute path");
		free(t->cwd);
		t->cwd = strdup(cwd);
		return t->cwd ? 1 : -ENOMEM;
	}
	if (!strcmp(key, "egress")) {
		char egress[EGRESS_POLICY_MAX];
		if ((r = sandbox_egress_option(m, key, egress, sizeof egress, err)) < 0)
			return r;
		free(t->egress);
		t->egress = strdup(egress);
		return t->egress ? 1 : -ENOMEM;
	}
	if (!strcmp(key, "user")) {
		const char *user;
		r = sd_bus_message_read(m, "v", "s", &user);
		if (r < 0 || parse_user(user, &t->uid, &t->gid) < 0)
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Option 'user' is UID or UID:GID (0-%d)",
						 TEMPLATE_ID_MAX);
		t->user_set = true;
		return 1;
	}
	return 0;
}

static bool
env_has(const struct template *t, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < t->envc; i++)
		if (!strncmp(t->env[i], key, kl) && t->env[i][kl] == '=')
			return true;
	return false;
}

int
template_spawn_fill(const struct template *t, const char *sandbox_id,
		    Warren__V1__SpawnSandboxRequest *q, char ***env_out)
{
	/* Warren's defaults unless the template sets them, the template's, then the id (always
	 * Warren's: a template cannot make a sandbox believe it is another) */
	char **env = calloc(t->envc + 4, sizeof *env);
	if (!env)
		return -ENOMEM;
	size_t n = 0;
	if (!env_has(t, "PATH"))
		env[n++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	if (!env_has(t, "HOME"))
		env[n++] = strdup("HOME=/root");
	for (size_t i = 0; i < t->envc; i++)
		if (strncmp(t->env[i], "WARREN_SANDBOX_ID=", 18))
			env[n++] = strdup(t->env[i]);
	char idenv[64];
	snprintf(idenv, sizeof idenv, "WARREN_SANDBOX_ID=%s", sandbox_id);
	env[n++] = strdup(idenv);
	q->env = env;
	q->n_env = n;
	q->cwd = t->cwd ? t->cwd : "";
	q->uid = t->user_set ? t->uid : 0;
	q->gid = t->user_set ? t->gid : 0;
	*env_out = env;
	return 0;
}

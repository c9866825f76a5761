/* netnsd's checks of what the supervisor sends (netnsd process, before its dispatch acts). The
 * supervisor may be compromised: every field is checked here. An image directory fd is only
 * looked at (a directory?): the proof that it is one of snapshotd's own image directories is
 * made by the spawner, the side that writes into it as root (spawner/image-proof.c); netnsd runs
 * under its own uid, cannot read snapshotd's 0700 store and has no openat2 in its filter. */
#include "backend.h"
#include "egress-policy.h"
#include "netnsd-validate.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "oci-spec.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIN_MEMORY (16ull << 20)

bool
netnsd_strings_valid(char *const *v, size_t n, size_t max, bool env)
{
	if (n > max || (n && !v))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!v[i])
			return false;
		size_t len = strlen(v[i]);
		if (len > NETNSD_MAX_ARG_LEN || (env && (!strchr(v[i], '=') || v[i][0] == '=')))
			return false;
	}
	return true;
}

static int why_err(int r, char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
why_err(int r, char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return r;
}

int
netnsd_validate_spawn(const Warren__V1__SpawnSandboxRequest *q, uint64_t mem_total, char *why,
		      size_t size)
{
	if (!q)
		return why_err(-EINVAL, why, size, "missing spawn parameters");
	if (!sandbox_id_valid(q->id))
		return why_err(-EINVAL, why, size, "bad sandbox id");
	if (!backend_valid(q->backend))
		return why_err(-EOPNOTSUPP, why, size, "backend is not served");
	if (q->n_argv == 0 || !q->argv || !q->argv[0] || !q->argv[0][0] ||
	    !netnsd_strings_valid(q->argv, q->n_argv, NETNSD_MAX_ARGS, false) ||
	    !netnsd_strings_valid(q->env, q->n_env, NETNSD_MAX_ARGS, true))
		return why_err(-EINVAL, why, size, "bad argv or env");
	if (q->pids_limit && (q->pids_limit < OCI_PIDS_MIN || q->pids_limit > OCI_PIDS_MAX))
		return why_err(-EINVAL, why, size, "pids limit %u is not 0 or %u-%u", q->pids_limit,
			       OCI_PIDS_MIN, OCI_PIDS_MAX);
	if (q->cpu_millis &&
	    (q->cpu_millis < OCI_CPU_MILLIS_MIN || q->cpu_millis > OCI_CPU_MILLIS_MAX))
		return why_err(-EINVAL, why, size, "CPU quota %u is not 0 or %u-%u thousandths",
			       q->cpu_millis, OCI_CPU_MILLIS_MIN, OCI_CPU_MILLIS_MAX);
	if (q->memory_limit < MIN_MEMORY || q->memory_limit > mem_total)
		return why_err(-EINVAL, why, size, "memory limit out of range");
	if (!port_valid(q->port))
		return why_err(-EINVAL, why, size, "bad port");
	if (!q->rootfs || !q->rootfs[0] || strlen(q->rootfs) >= PATH_MAX)
		return why_err(-EINVAL, why, size, "bad rootfs");
	/* the template's working directory and ids (OCI imports): inside the sandbox only */
	if (!q->cwd ||
	    (q->cwd[0] && (q->cwd[0] != '/' || !string_valid(q->cwd, NETNSD_MAX_ARG_LEN))))
		return why_err(-EINVAL, why, size, "bad working directory");
	if (q->uid > 65534 || q->gid > 65534)
		return why_err(-EINVAL, why, size, "bad uid or gid");
	return 0;
}

int
netnsd_validate_exec(const Warren__V1__ExecRequest *q, char *why, size_t size)
{
	if (q->n_argv == 0 || !netnsd_strings_valid(q->argv, q->n_argv, NETNSD_MAX_ARGS, false) ||
	    q->timeout_ms > 600000)
		return why_err(-EINVAL, why, size, "bad argv or timeout");
	return 0;
}

int
netnsd_validate_pool_reserve(const Warren__V1__PoolReserveRequest *q, char *why, size_t size)
{
	/* any count >= 1 is a fair announcement: pool_policy_reserve bounds what is built */
	if (!q || q->count == 0)
		return why_err(-EINVAL, why, size, "a reservation of 0 creates");
	return 0;
}

int
netnsd_validate_set_egress(const Warren__V1__SetEgressRequest *q, struct egress_policy *p,
			   char *why, size_t size)
{
	if (!q || !q->policy)
		return why_err(-EINVAL, why, size, "missing egress policy");
	/* the whole text is parsed here again: the supervisor's check is not relied on */
	return egress_policy_parse(q->policy, p, why, size);
}

int
netnsd_validate_image_fd(int fd, char *why, size_t size)
{
	/* a cheap first look: the proof that it is snapshotd's is the spawner's (image-proof.c),
	 * which receives this very fd, untouched */
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return why_err(-EINVAL, why, size, "the image fd is not a directory");
	return 0;
}

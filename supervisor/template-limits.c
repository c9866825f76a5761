/* A template's own pids and CPU bounds (AddTemplate options "pids" and "cpu_millis"). Checked
 * here for a friendly error, in the record (template-record.c) and again by netnsd; the
 * host-wide --sandbox-pids/--sandbox-cpus of netnsd stay the caps: its spawner gives a sandbox
 * the smaller of the two (a gVisor sandbox's config.json, a microVM's VMM cgroup). */
#include "supervisor.h"
#include "templates.h"
#include "template-record.h"

#include <string.h>

int
template_limit_option(sd_bus_message *m, const char *key, struct template *t, sd_bus_error *err)
{
	uint32_t v = 0;
	int r = sd_bus_message_read(m, "v", "u", &v);
	if (r < 0)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Option %s is a uint32 (u)",
					 key);
	if (!strcmp(key, "pids")) {
		if (v && (v < TEMPLATE_PIDS_MIN || v > TEMPLATE_PIDS_MAX))
			return sd_bus_error_setf(
				err, ERR("InvalidArgument"),
				"pids is 0 (the host's) or %d-%d host tasks, not %u",
				TEMPLATE_PIDS_MIN, TEMPLATE_PIDS_MAX, v);
		t->pids_max = v;
		return 0;
	}
	if (v && (v < TEMPLATE_CPU_MILLIS_MIN || v > TEMPLATE_CPU_MILLIS_MAX))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"cpu_millis is 0 (the host's) or %d-%d thousandths of a CPU, "
			"not %u",
			TEMPLATE_CPU_MILLIS_MIN, TEMPLATE_CPU_MILLIS_MAX, v);
	t->cpu_millis = v;
	return 0;
}

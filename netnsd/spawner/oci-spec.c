/* config.json for runsc: read-only shared template rootfs (runsc gives it a memory overlay),
 * the slot's network namespace by path (runsc makes an empty one otherwise), a cgroup under
 * netnsd's parent with the sandbox's bounds: memory (and memory+swap at the same value, so swap
 * is no way past it; reclaim still swaps out, which keeps memory+swap as it was), a CPU quota and
 * a pids limit (a fork bomb inside stops there). Written by netnsd's spawner. */
#include "oci-spec.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Docker's default capabilities, less NET_RAW and MKNOD (why: where they are used below) */
static const char agent_caps[] = "[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FSETID\","
				 "\"CAP_FOWNER\",\"CAP_SETGID\",\"CAP_SETUID\","
				 "\"CAP_SETFCAP\",\"CAP_SETPCAP\",\"CAP_NET_BIND_SERVICE\","
				 "\"CAP_SYS_CHROOT\",\"CAP_KILL\",\"CAP_AUDIT_WRITE\"]";

static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
write_str_array(FILE *f, char *const *v, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_str(f, v[i]);
	}
	fputc(']', f);
}

int
oci_spec_write(const char *bundle_dir, const struct oci_spec *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f,
		"{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,"
		"\"user\":{\"uid\":%u,\"gid\":%u},\"args\":",
		s->uid, s->gid);
	write_str_array(f, s->argv, s->argc);
	fputs(",\"env\":", f);
	write_str_array(f, s->env, s->envc);
	fputs(",\"cwd\":", f);
	json_str(f, s->cwd && s->cwd[0] ? s->cwd : "/");
	if (s->agent_source)
		/* The agent starts E2B's commands as the template's user (`user`, setuid) or as
		 * root, which expects a container's usual powers (chown, kill, bind :80): Docker's
		 * default set, less NET_RAW and MKNOD. They are capabilities in gVisor's kernel,
		 * not the host's; without an agent the program keeps none. */
		fprintf(f,
			",\"capabilities\":{\"bounding\":%s,\"effective\":%s,"
			"\"permitted\":%s}",
			agent_caps, agent_caps, agent_caps);
	fputs(",\"noNewPrivileges\":true},\"root\":{\"path\":", f);
	json_str(f, s->rootfs);
	fputs(",\"readonly\":true},\"hostname\":", f);
	json_str(f, s->id);
	fputs(",\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
	      "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
	      "{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}",
	      f);
	if (s->agent_source) {
		/* the agent, read-only: the sandbox runs it but cannot change it */
		fputs(",{\"destination\":\"" AGENT_PROTO_GVISOR_PATH
		      "\",\"type\":\"bind\",\"source\":",
		      f);
		json_str(f, s->agent_source);
		fputs(",\"options\":[\"bind\",\"ro\",\"nosuid\",\"nodev\"]}", f);
	}
	fputs("],\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":"
	      "\"uts\"},"
	      "{\"type\":\"mount\"},{\"type\":\"network\",\"path\":",
	      f);
	json_str(f, s->netns_path);
	fprintf(f, "}],\"resources\":{\"memory\":{\"limit\":%llu,\"swap\":%llu}",
		(unsigned long long)s->memory_limit, (unsigned long long)s->memory_limit);
	if (s->pids_limit)
		fprintf(f, ",\"pids\":{\"limit\":%u}", s->pids_limit);
	if (s->cpu_quota_us && s->cpu_period_us)
		fprintf(f, ",\"cpu\":{\"quota\":%u,\"period\":%u}", s->cpu_quota_us,
			s->cpu_period_us);
	fputs("},\"cgroupsPath\":", f);
	json_str(f, s->cgroups_path);
	fputs("}}\n", f);
	fclose(f);
	char path[512];
	snprintf(path, sizeof path, "%s/config.json", bundle_dir);
	int r = file_write_atomic(path, buf, len, 0600, false);
	free(buf);
	return r;
}

int
oci_spec_set_netns(const char *bundle_dir, const char *netns_path)
{
	char path[512];
	snprintf(path, sizeof path, "%s/config.json", bundle_dir);
	json_error_t err;
	/* the spawner's own file (root's 0600 in its runtime dir), bounded all the same */
	json_t *spec = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!spec)
		return -EINVAL;
	int r = -ENOENT;
	json_t *ns = json_object_get(json_object_get(spec, "linux"), "namespaces"), *e;
	size_t i;
	json_array_foreach(ns, i, e)
	{
		if (json_is_string(json_object_get(e, "type")) &&
		    !strcmp(json_string_value(json_object_get(e, "type")), "network"))
			r = json_object_set_new(e, "path", json_string(netns_path)) < 0 ? -ENOMEM
											: 0;
	}
	char *text = r == 0 ? json_dumps(spec, JSON_COMPACT) : NULL;
	json_decref(spec);
	if (r == 0 && !text)
		r = -ENOMEM;
	if (r == 0)
		r = file_write_atomic(path, text, strlen(text), 0600, false);
	free(text);
	return r;
}

int
oci_spec_limits_option(struct oci_limits *l, int opt, const char *arg)
{
	char *end;
	switch (opt) {
	case 0x1101: {
		unsigned long v = strtoul(arg, &end, 10);
		if (*end || v < OCI_PIDS_MIN || v > OCI_PIDS_MAX) {
			log_error("--sandbox-pids is 64-65536");
			return -EINVAL;
		}
		l->pids_max = (uint32_t)v;
		return 1;
	}
	case 0x1102: {
		double v = strtod(arg, &end);
		if (*end || !(v == 0 || (v >= 0.05 && v <= 1024))) {
			log_error("--sandbox-cpus is 0 (no quota) or 0.05-1024");
			return -EINVAL;
		}
		l->cpu_millis = (uint32_t)(v * 1000 + 0.5);
		return 1;
	}
	}
	return 0;
}

struct oci_limits
oci_limits_effective(const struct oci_limits *cap, uint32_t pids, uint32_t cpu_millis)
{
	struct oci_limits l = cap ? *cap : (struct oci_limits){0};
	if (pids && (!l.pids_max || pids < l.pids_max))
		l.pids_max = pids;
	if (cpu_millis && (!l.cpu_millis || cpu_millis < l.cpu_millis))
		l.cpu_millis = cpu_millis;
	return l;
}

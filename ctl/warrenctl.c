/* warrenctl: a thin command-line client of org.warren.Warren1 on the system bus, following
 * podman's and machinectl's conventions: `warrenctl [--json] COMMAND [OPTIONS] ARGS`, --help for
 * every command, --version, options after the command parsed (unknown ones refused with status
 * 2), sandbox ids accepted by a unique prefix, --json (and --format for list/ps) for scripts,
 * errors in the user's terms. Every command is one or a few D-Bus calls. */
#include "api-keys.h"
#include "ctl-agent.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define SANDBOX_IFACE "org.warren.Warren1.Sandbox"
#define ERR_PREFIX "org.warren.Warren1.Error."

static bool json;
static sd_bus *bus;
static const char *cmd_name = "";

/* ---- output helpers --------------------------------------------------------------------- */

/* An error for a person: Warren's own messages as they are (they say what to do), the bus's
 * own ones translated; never an object path or method name. */
static int
fail(int r, sd_bus_error *e, const char *what)
{
	const char *msg = e && e->message ? e->message : strerror(r < 0 ? -r : r);
	if (e && e->name && strncmp(e->name, ERR_PREFIX, strlen(ERR_PREFIX))) {
		if (!strcmp(e->name, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
		    !strcmp(e->name, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
			msg = "Warren is not running (start it with warren-launch start or "
			      "systemctl start warren-supervisor)";
		else if (!strcmp(e->name, SD_BUS_ERROR_ACCESS_DENIED) &&
			 (!e->message || !strncmp(e->message, "Rejected", 8)))
			/* the bus policy's own refusal; Warren's (e.g. not the creator) says why */
			msg = "permission denied (root or the group warren may use Warren)";
		else if (!strcmp(e->name, SD_BUS_ERROR_NO_REPLY) ||
			 !strcmp(e->name, SD_BUS_ERROR_TIMEOUT))
			msg = "Warren did not answer in time";
		else if (!strcmp(e->name, SD_BUS_ERROR_UNKNOWN_METHOD) ||
			 !strcmp(e->name, SD_BUS_ERROR_UNKNOWN_OBJECT))
			msg = "this Warren does not know that (is it older than warrenctl?)";
	}
	fprintf(stderr, "warrenctl: %s: %s\n", what, msg);
	return 1;
}

static void
json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* Print a D-Bus value of m's next element (a variant's content) as JSON. */
static int
json_value(sd_bus_message *m)
{
	char type;
	const char *contents;
	int r = sd_bus_message_peek_type(m, &type, &contents);
	if (r <= 0)
		return r < 0 ? r : -EINVAL;
	union {
		const char *s;
		int b;
		uint8_t y;
		int16_t n;
		uint16_t q;
		int32_t i;
		uint32_t u;
		int64_t x;
		uint64_t t;
		double d;
	} v;
	switch (type) {
	case 's':
	case 'o':
	case 'g':
		sd_bus_message_read_basic(m, type, &v.s);
		json_str(v.s);
		return 0;
	case 'b':
		sd_bus_message_read_basic(m, type, &v.b);
		printf(v.b ? "true" : "false");
		return 0;
	case 'y':
		sd_bus_message_read_basic(m, type, &v.y);
		printf("%u", v.y);
		return 0;
	case 'n':
		sd_bus_message_read_basic(m, type, &v.n);
		printf("%d", v.n);
		return 0;
	case 'q':
		sd_bus_message_read_basic(m, type, &v.q);
		printf("%u", v.q);
		return 0;
	case 'i':
		sd_bus_message_read_basic(m, type, &v.i);
		printf("%d", v.i);
		return 0;
	case 'u':
		sd_bus_message_read_basic(m, type, &v.u);
		printf("%u", v.u);
		return 0;
	case 'x':
		sd_bus_message_read_basic(m, type, &v.x);
		printf("%lld", (long long)v.x);
		return 0;
	case 't':
		sd_bus_message_read_basic(m, type, &v.t);
		printf("%llu", (unsigned long long)v.t);
		return 0;
	case 'd':
		sd_bus_message_read_basic(m, type, &v.d);
		printf("%g", v.d);
		return 0;
	case 'v':
		sd_bus_message_enter_container(m, 'v', contents);
		r = json_value(m);
		sd_bus_message_exit_container(m);
		return r;
	case 'a': {
		bool dict = contents[0] == '{';
		sd_bus_message_enter_container(m, 'a', contents);
		printf(dict ? "{" : "[");
		int first = 1;
		while (!sd_bus_message_at_end(m, false)) {
			if (!first)
				putchar(',');
			first = 0;
			if (dict) {
				char inner[64]; /* "{sv}" -> "sv" */
				snprintf(inner, sizeof inner, "%.*s", (int)strlen(contents) - 2,
					 contents + 1);
				sd_bus_message_enter_container(m, 'e', inner);
				char kt;
				sd_bus_message_peek_type(m, &kt, NULL);
				const char *k = NULL;
				if (kt == 's') {
					sd_bus_message_read_basic(m, 's', &k);
					json_str(k);
				} else {
					putchar('"');
					json_value(m);
					putchar('"');
				}
				putchar(':');
				json_value(m);
				sd_bus_message_exit_container(m);
			} else
				json_value(m);
		}
		sd_bus_message_exit_container(m);
		printf(dict ? "}" : "]");
		return 0;
	}
	case 'r': {
		sd_bus_message_enter_container(m, 'r', contents);
		printf("[");
		for (int first = 1; !sd_bus_message_at_end(m, false); first = 0) {
			if (!first)
				putchar(',');
			json_value(m);
		}
		printf("]");
		return sd_bus_message_exit_container(m);
	}
	}
	return sd_bus_message_skip(m, NULL);
}

static int
get_string(const char *path, const char *iface, const char *prop, char **out)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = sd_bus_get_property_string(bus, BUS_NAME, path, iface, prop, &e, out);
	sd_bus_error_free(&e);
	return r;
}

static uint32_t
get_u32(const char *prop)
{
	uint32_t v = 0;
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, prop, NULL, 'u',
				    &v);
	return v;
}

static uint64_t
get_u64(const char *prop)
{
	uint64_t v = 0;
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, prop, NULL, 't',
				    &v);
	return v;
}

static char *
sandbox_path(const char *id)
{
	char *p = NULL;
	sd_bus_path_encode("/org/warren/Warren1/sandbox", id, &p);
	return p;
}

/* ---- sandboxes: the list, prefixes --------------------------------------------------------- */

struct sb_info {
	char *id, *template, *backend, *state, *reason, *url, *image, *timeout_action;
	uint64_t created_usec, memory, end_usec;
};

static void
sb_info_free(struct sb_info *s)
{
	free(s->id);
	free(s->template);
	free(s->backend);
	free(s->state);
	free(s->reason);
	free(s->url);
	free(s->image);
	free(s->timeout_action);
}

/* The sandboxes' ids, in the Manager's order. */
static int
list_ids(char ***ids_out, size_t *n_out, sd_bus_error *e)
{
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListSandboxes", e,
				   &reply, "");
	if (r < 0)
		return r;
	char **ids = NULL;
	size_t n = 0;
	const char *id, *tmpl, *state, *path;
	sd_bus_message_enter_container(reply, 'a', "(ssso)");
	r = 0;
	while (sd_bus_message_read(reply, "(ssso)", &id, &tmpl, &state, &path) > 0) {
		char **grown = realloc(ids, (n + 2) * sizeof *ids);
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		ids = grown;
		ids[n] = strdup(id);
		if (!ids[n]) {
			r = -ENOMEM;
			break;
		}
		ids[++n] = NULL;
	}
	sd_bus_message_unref(reply);
	*ids_out = ids;
	*n_out = n;
	return r;
}

/* A full id from a unique prefix (podman's rule): exact match first, then one prefix match. */
static int
resolve_id(const char *arg, char **full)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char **ids = NULL;
	size_t n = 0;
	int r = list_ids(&ids, &n, &e);
	if (r < 0)
		return fail(r, &e, "listing sandboxes"), -1;
	const char *match = NULL;
	size_t matches = 0, len = strlen(arg);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(ids[i], arg)) {
			match = ids[i];
			matches = 1;
			break;
		}
		if (!strncmp(ids[i], arg, len)) { /* "" is a prefix of every id */
			match = ids[i];
			matches++;
		}
	}
	r = 0;
	if (matches == 1) {
		*full = strdup(match);
		if (!*full) {
			fprintf(stderr, "warrenctl: %s: out of memory\n", cmd_name);
			r = -1;
		}
	} else {
		if (matches == 0)
			fprintf(stderr, "warrenctl: %s: no sandbox %s\n", cmd_name, arg);
		else
			fprintf(stderr,
				"warrenctl: %s: %s matches %zu sandboxes; give more of the id\n",
				cmd_name, arg, matches);
		r = -1;
	}
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return r;
}

static int
sb_info_get(const char *id, struct sb_info *s)
{
	memset(s, 0, sizeof *s);
	char *path = sandbox_path(id);
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
				   &e, &reply, "s", SANDBOX_IFACE);
	free(path);
	sd_bus_error_free(&e);
	if (r < 0)
		return r;
	s->id = strdup(id);
	if (!s->id) {
		sd_bus_message_unref(reply);
		return -ENOMEM;
	}
	sd_bus_message_enter_container(reply, 'a', "{sv}");
	while (sd_bus_message_enter_container(reply, 'e', "sv") > 0) {
		const char *k, *v;
		char type;
		const char *contents;
		sd_bus_message_read(reply, "s", &k);
		sd_bus_message_peek_type(reply, &type, &contents);
		struct {
			const char *name;
			char **dst;
		} strs[] = {{"Template", &s->template},
			    {"Backend", &s->backend},
			    {"State", &s->state},
			    {"Reason", &s->reason},
			    {"URL", &s->url},
			    {"Image", &s->image},
			    {"TimeoutAction", &s->timeout_action}};
		bool done = false;
		for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
			if (!strcmp(k, strs[i].name) && !strcmp(contents, "s")) {
				sd_bus_message_read(reply, "v", "s", &v);
				*strs[i].dst = strdup(v);
				if (!*strs[i].dst)
					r = -ENOMEM;
				done = true;
			}
		if (!done && !strcmp(k, "CreatedUSec") && !strcmp(contents, "t"))
			sd_bus_message_read(reply, "v", "t", &s->created_usec);
		else if (!done && !strcmp(k, "MemoryCurrent") && !strcmp(contents, "t"))
			sd_bus_message_read(reply, "v", "t", &s->memory);
		else if (!done && !strcmp(k, "EndUSec") && !strcmp(contents, "t"))
			sd_bus_message_read(reply, "v", "t", &s->end_usec);
		else if (!done)
			sd_bus_message_skip(reply, "v");
		sd_bus_message_exit_container(reply);
	}
	sd_bus_message_unref(reply);
	return r;
}

static void
human_age(uint64_t created_usec, char *buf, size_t size)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t nowu = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	uint64_t s = created_usec && nowu > created_usec ? (nowu - created_usec) / 1000000 : 0;
	if (s < 60)
		snprintf(buf, size, "%llus", (unsigned long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%llum", (unsigned long long)s / 60);
	else if (s < 86400)
		snprintf(buf, size, "%lluh", (unsigned long long)s / 3600);
	else
		snprintf(buf, size, "%llud", (unsigned long long)s / 86400);
}

static uint64_t
age_seconds(uint64_t created_usec)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t nowu = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	return created_usec && nowu > created_usec ? (nowu - created_usec) / 1000000 : 0;
}

/* --format: podman's Go-template fields, {{.ID}} {{.Template}} {{.Backend}} {{.State}}
 * {{.Reason}} {{.Age}} {{.Created}} {{.Memory}} {{.URL}} {{.Image}}, and \t \n. */
static int
print_format(const char *fmt, const struct sb_info *s)
{
	for (const char *p = fmt; *p;) {
		if (p[0] == '\\' && (p[1] == 't' || p[1] == 'n')) {
			putchar(p[1] == 't' ? '\t' : '\n');
			p += 2;
			continue;
		}
		if (strncmp(p, "{{", 2)) {
			putchar(*p++);
			continue;
		}
		const char *end = strstr(p, "}}");
		if (!end)
			return -EINVAL;
		char field[32];
		const char *f = p + 2;
		while (*f == ' ')
			f++;
		size_t n = (size_t)(end - f);
		while (n && f[n - 1] == ' ')
			n--;
		if (n == 0 || n >= sizeof field || f[0] != '.')
			return -EINVAL;
		memcpy(field, f + 1, n - 1);
		field[n - 1] = 0;
		char age[32];
		if (!strcmp(field, "ID"))
			fputs(s->id, stdout);
		else if (!strcmp(field, "Template"))
			fputs(s->template ? s->template : "", stdout);
		else if (!strcmp(field, "Backend"))
			fputs(s->backend ? s->backend : "", stdout);
		else if (!strcmp(field, "State"))
			fputs(s->state ? s->state : "", stdout);
		else if (!strcmp(field, "Reason"))
			fputs(s->reason ? s->reason : "", stdout);
		else if (!strcmp(field, "URL"))
			fputs(s->url ? s->url : "", stdout);
		else if (!strcmp(field, "Image"))
			fputs(s->image ? s->image : "", stdout);
		else if (!strcmp(field, "Age")) {
			human_age(s->created_usec, age, sizeof age);
			fputs(age, stdout);
		} else if (!strcmp(field, "Created"))
			printf("%llu", (unsigned long long)(s->created_usec / 1000000));
		else if (!strcmp(field, "Memory"))
			printf("%llu", (unsigned long long)s->memory);
		else
			return -EINVAL;
		p = end + 2;
	}
	putchar('\n');
	return 0;
}

/* ---- commands ------------------------------------------------------------------------------ */

struct command {
	const char *name;
	const char *args;
	const char *help;
	const struct option *opts; /* besides --help and --json */
	int min_args, max_args;	   /* after options; max -1: any */
	int (*fn)(int argc, char **argv);
};

/* Parsed options of the current command (the getopt value is the index in the table). */
#define MAX_OPTS 24
static const char *opt_val[MAX_OPTS];
static int opt_seen[MAX_OPTS];
static char *opt_list[MAX_OPTS][64]; /* repeatable ones (--env) */
static int opt_n[MAX_OPTS];

static const struct command *cur;
static int
opt_index(const char *name)
{
	for (int i = 0; cur->opts && cur->opts[i].name; i++)
		if (!strcmp(cur->opts[i].name, name))
			return i;
	return -1;
}
static const char *
opt(const char *name)
{
	int i = opt_index(name);
	return i >= 0 ? opt_val[i] : NULL;
}
static bool
flag(const char *name)
{
	int i = opt_index(name);
	return i >= 0 && opt_seen[i];
}

static int
parse_u64(const char *s, const char *what, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v > max) {
		fprintf(stderr, "warrenctl: %s: %s must be a number of at most %llu\n", cmd_name,
			what, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

static void print_reclaim(void);

static int
cmd_status(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *version = NULL, *url = NULL;
	int r = sd_bus_get_property_string(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Version",
					   &e, &version);
	if (r < 0)
		return fail(r, &e, "status");
	get_string(MANAGER_PATH, MANAGER_IFACE, "GatewayURL", &url);
	uint32_t size = get_u32("PoolSize"), freec = get_u32("PoolFree"),
		 count = get_u32("SandboxCount");
	if (json) {
		printf("{\"version\":");
		json_str(version);
		printf(",\"gateway_url\":");
		json_str(url);
		printf(",\"pool_size\":%u,\"pool_free\":%u,\"sandboxes\":%u,\"helpers\":[", size,
		       freec, count);
	} else
		printf("Warren %s\n  gateway:    %s\n  pool:       %u slots, %u free\n  sandboxes: "
		       " %u\n",
		       version, url ? url : "", size, freec, count);
	r = sd_bus_get_property(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Helpers", &e, &reply,
				"a(sbs)");
	if (r < 0)
		return fail(r, &e, "status");
	sd_bus_message_enter_container(reply, 'a', "(sbs)");
	const char *name, *ver;
	int up, first = 1;
	while (sd_bus_message_read(reply, "(sbs)", &name, &up, &ver) > 0) {
		if (json) {
			printf("%s{\"name\":", first ? "" : ",");
			json_str(name);
			printf(",\"up\":%s,\"version\":", up ? "true" : "false");
			json_str(ver);
			printf("}");
		} else
			printf("  %-11s %s%s%s\n", name, up ? "up" : "DOWN", up ? ", version " : "",
			       up ? ver : "");
		first = 0;
	}
	sd_bus_message_unref(reply);
	reply = NULL;
	r = sd_bus_get_property(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Backends", &e, &reply,
				"as");
	printf(json ? "],\"backends\":[" : "  backends:  ");
	if (r >= 0) {
		sd_bus_message_enter_container(reply, 'a', "s");
		first = 1;
		while (sd_bus_message_read(reply, "s", &name) > 0) {
			printf("%s", first ? (json ? "" : " ") : (json ? "," : ", "));
			if (json)
				json_str(name);
			else
				fputs(name, stdout);
			first = 0;
		}
	}
	printf(json ? "]}\n" : "\n");
	if (!json)
		print_reclaim();
	sd_bus_message_unref(reply);
	free(version);
	free(url);
	return 0;
}

static void
print_reclaim(void)
{
	int zswap = 0;
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ZswapEnabled",
				    NULL, 'b', &zswap);
	uint64_t swap = get_u64("SwapBytes"), pool = get_u64("ZswapPoolBytes"),
		 held = get_u64("ZswappedBytes");
	if (json)
		printf("{\"swap_bytes\":%llu,\"zswap_enabled\":%s,\"zswap_pool_bytes\":%llu,"
		       "\"zswapped_bytes\":%llu}\n",
		       (unsigned long long)swap, zswap ? "true" : "false", (unsigned long long)pool,
		       (unsigned long long)held);
	else
		printf("  swap:       %llu MiB; zswap %s, pool %llu MiB holding %llu MiB\n",
		       (unsigned long long)(swap >> 20), zswap ? "on" : "off",
		       (unsigned long long)(pool >> 20), (unsigned long long)(held >> 20));
}

static int
cmd_reclaim(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	const char *what = argc ? argv[0] : "show";
	int r;
	if (!strcmp(what, "setup")) {
		uint64_t mib = 1024;
		if (argc > 1 && parse_u64(argv[1], "MIB", 1 << 20, &mib) < 0)
			return 2;
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "SetupReclaim",
				       &e, NULL, "tbsu", mib << 20, !flag("no-zswap"), "", 0);
	} else if (!strcmp(what, "undo"))
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "UndoReclaim",
				       &e, NULL, "");
	else if (!strcmp(what, "show"))
		r = 0;
	else {
		fprintf(stderr, "warrenctl: reclaim: show, setup [MIB] [--no-zswap] or undo\n");
		return 2;
	}
	if (r < 0)
		return fail(r, &e, "reclaim");
	print_reclaim();
	return 0;
}

static int
cmd_list(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char **ids = NULL;
	size_t n = 0;
	int r = list_ids(&ids, &n, &e);
	if (r < 0)
		return fail(r, &e, "listing sandboxes");
	const char *fmt = opt("format");
	if (fmt && !strcmp(fmt, "json")) {
		json = true;
		fmt = NULL;
	}
	if (json)
		printf("[");
	else if (!fmt && !flag("quiet"))
		printf("%-12s  %-10s %-8s %-12s %6s %9s  %s\n", "ID", "TEMPLATE", "BACKEND",
		       "STATE", "AGE", "MEMORY", "REASON");
	int rc = 0, first = 1;
	for (size_t i = 0; i < n; i++) {
		struct sb_info s;
		if (sb_info_get(ids[i], &s) < 0)
			continue; /* gone meanwhile */
		char age[32];
		human_age(s.created_usec, age, sizeof age);
		if (json) {
			printf("%s{\"id\":", first ? "" : ",");
			json_str(s.id);
			printf(",\"template\":");
			json_str(s.template);
			printf(",\"backend\":");
			json_str(s.backend);
			printf(",\"state\":");
			json_str(s.state);
			printf(",\"reason\":");
			json_str(s.reason);
			printf(",\"created_usec\":%llu,\"age_seconds\":%llu,\"memory_bytes\":%llu,"
			       "\"url\":",
			       (unsigned long long)s.created_usec,
			       (unsigned long long)age_seconds(s.created_usec),
			       (unsigned long long)s.memory);
			json_str(s.url);
			printf(",\"image\":");
			json_str(s.image);
			/* the lifetime (SetTimeout): its end, 0 for none, and what happens then */
			printf(",\"end_usec\":%llu,\"timeout_action\":",
			       (unsigned long long)s.end_usec);
			json_str(s.timeout_action);
			printf("}");
		} else if (flag("quiet"))
			printf("%s\n", s.id);
		else if (fmt) {
			if (print_format(fmt, &s) < 0) {
				fprintf(stderr,
					"warrenctl: %s: bad --format (fields: {{.ID}} "
					"{{.Template}} "
					"{{.Backend}} {{.State}} {{.Reason}} {{.Age}} {{.Created}} "
					"{{.Memory}} {{.URL}} {{.Image}})\n",
					cmd_name);
				rc = 2;
				sb_info_free(&s);
				break;
			}
		} else {
			char mem[32];
			snprintf(mem, sizeof mem, "%.1fMiB", (double)s.memory / (1 << 20));
			printf("%-12s  %-10s %-8s %-12s %6s %9s  %s\n", s.id, s.template, s.backend,
			       s.state, age, mem, s.reason ? s.reason : "");
		}
		first = 0;
		sb_info_free(&s);
	}
	if (json)
		printf("]\n");
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return rc;
}

static int
cmd_inspect(int argc, char **argv)
{
	int rc = 0;
	if (json || true)
		printf(argc > 1 ? "[" : "");
	for (int a = 0; a < argc; a++) {
		char *id = NULL;
		if (resolve_id(argv[a], &id) < 0) {
			rc = 1;
			continue;
		}
		char *path = sandbox_path(id);
		sd_bus_error e = SD_BUS_ERROR_NULL;
		sd_bus_message *reply = NULL;
		int r = sd_bus_call_method(bus, BUS_NAME, path, "org.freedesktop.DBus.Properties",
					   "GetAll", &e, &reply, "s", SANDBOX_IFACE);
		free(path);
		if (r < 0) {
			fail(r, &e, "inspect");
			rc = 1;
		} else {
			if (a && argc > 1)
				printf(",");
			json_value(reply);
			sd_bus_message_unref(reply);
		}
		free(id);
	}
	printf(argc > 1 ? "]\n" : "\n");
	return rc;
}

/* Long calls: sent asynchronously; Manager.Progress and ImportProgress signals shown until the
 * answer comes: a bar on a terminal, plain lines otherwise. */
static bool progress_tty;
static char last_phase[64];

static void
progress_show(const char *op, const char *what, const char *phase, uint64_t done, uint64_t total)
{
	if (json)
		return;
	if (!progress_tty) {
		/* one line per phase change and at the end of a phase, no carriage returns */
		if (strcmp(last_phase, phase) || (total && done == total))
			fprintf(stderr, "%s %s: %s %llu/%llu\n", op, what, phase,
				(unsigned long long)done, (unsigned long long)total);
		snprintf(last_phase, sizeof last_phase, "%s", phase);
		return;
	}
	int width = 30, fill = total ? (int)(width * (done > total ? total : done) / total) : 0;
	fprintf(stderr, "\r%s %s [%.*s%*s] %llu/%llu %-20s", op, what, fill,
		"##############################", width - fill, "", (unsigned long long)done,
		(unsigned long long)total, phase);
}

static int
on_progress(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	const char *op, *tag, *phase;
	uint32_t done, total;
	if (sd_bus_message_read(m, "sssuu", &op, &tag, &phase, &done, &total) >= 0)
		progress_show(op, tag, phase, done, total);
	return 0;
}

static int
on_import_progress(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	const char *name, *phase;
	uint64_t done, total;
	if (sd_bus_message_read(m, "sstt", &name, &phase, &done, &total) >= 0 &&
	    (!ud || !strcmp(name, ud)))
		progress_show("import", name, phase, done, total);
	return 0;
}

static int
on_reply(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	*(sd_bus_message **)ud = sd_bus_message_ref(m);
	return 0;
}

static int
call_with_progress(sd_bus_message *m, sd_bus_error *e, sd_bus_message **reply, const char *name)
{
	progress_tty = isatty(2);
	sd_bus_match_signal(bus, NULL, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Progress",
			    on_progress, NULL);
	sd_bus_match_signal(bus, NULL, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ImportProgress",
			    on_import_progress, (void *)name);
	sd_bus_message *got = NULL;
	int r = sd_bus_call_async(bus, NULL, m, on_reply, &got, 30 * 60 * 1000000ull);
	while (r >= 0 && !got) {
		r = sd_bus_process(bus, NULL);
		if (r == 0)
			r = sd_bus_wait(bus, UINT64_MAX);
	}
	if (!json && progress_tty)
		fprintf(stderr, "\n");
	if (r < 0)
		return r;
	if (sd_bus_message_is_method_error(got, NULL)) {
		sd_bus_error_copy(e, sd_bus_message_get_error(got));
		r = -sd_bus_error_get_errno(e);
		sd_bus_message_unref(got);
		return r < 0 ? r : -EIO;
	}
	*reply = got;
	return 0;
}

static int
cmd_create(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
				       "CreateSandbox");
	sd_bus_message_append(m, "s", argv[0]);
	sd_bus_message_open_container(m, 'a', "{sv}");
	if (flag("wait"))
		sd_bus_message_append(m, "{sv}", "wait", "b", 1);
	if (opt("backend"))
		sd_bus_message_append(m, "{sv}", "backend", "s", opt("backend"));
	if (opt("egress"))
		sd_bus_message_append(m, "{sv}", "egress", "s", opt("egress"));
	sd_bus_message_close_container(m);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = sd_bus_call(bus, m, 120 * 1000000ull, &e, &reply);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sd_bus_message_unref(m);
	if (r < 0)
		return fail(r, &e, "create");
	const char *id, *path, *url;
	sd_bus_message_read(reply, "sos", &id, &path, &url);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (json) {
		printf("{\"id\":");
		json_str(id);
		printf(",\"url\":");
		json_str(url);
		printf(",\"ms\":%.1f}\n", ms);
	} else
		printf("%s %s\n", id, url);
	sd_bus_message_unref(reply);
	return 0;
}

/* A method of a sandbox found by (a prefix of) its id. */
static int
sandbox_call(const char *arg, const char *method, const char *verb)
{
	char *id = NULL;
	if (resolve_id(arg, &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, method, &e, NULL, "");
	free(path);
	free(id);
	return r < 0 ? fail(r, &e, verb) : 0;
}

static int
cmd_destroy(int argc, char **argv)
{
	int rc = 0;
	for (int i = 0; i < argc; i++)
		rc |= sandbox_call(argv[i], "Destroy", cmd_name);
	return rc;
}
static int
cmd_freeze(int argc, char **argv)
{
	return sandbox_call(argv[0], "Freeze", "freeze");
}
static int
cmd_thaw(int argc, char **argv)
{
	return sandbox_call(argv[0], "Thaw", "thaw");
}

/* egress ID POLICY: the sandbox's egress policy (SetEgress), checked by the supervisor and again
 * by netnsd. */
static int
cmd_egress(int argc, char **argv)
{
	char *id = NULL;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, "SetEgress", &e, NULL, "s",
				   argv[1]);
	free(path);
	if (r < 0) {
		free(id);
		return fail(r, &e, "egress");
	}
	if (json) {
		printf("{\"id\":");
		json_str(id);
		printf(",\"egress\":");
		json_str(argv[1]);
		printf("}\n");
	}
	free(id);
	return 0;
}

/* timeout ID SECONDS [--pause]: the sandbox's lifetime (SetTimeout); 0 clears it. The bound
 * (30 days) is the supervisor's to check; this one only keeps the number a number. */
static int
cmd_timeout(int argc, char **argv)
{
	uint64_t seconds;
	if (parse_u64(argv[1], "SECONDS", UINT64_MAX, &seconds) < 0)
		return 2;
	char *id = NULL;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, "SetTimeout", &e, NULL, "ts",
				   seconds, flag("pause") ? "pause" : "kill");
	free(path);
	if (r < 0) {
		free(id);
		return fail(r, &e, "timeout");
	}
	if (json)
		printf("{\"id\":\"%s\",\"seconds\":%llu,\"action\":\"%s\"}\n", id,
		       (unsigned long long)seconds, flag("pause") ? "pause" : "kill");
	free(id);
	return 0;
}

/* What reaching a sandbox's agent takes: its full id, its agent token (only its creator and
 * root get it) and the gateway's URL. 0, or warrenctl's exit status with a message printed. */
static int
agent_target_get(const char *arg, struct agent_target *t)
{
	char *id = NULL, *token = NULL, *url = NULL;
	if (resolve_id(arg, &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *path = sandbox_path(id);
	int rc = 0;
	int r = path ? sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, "AgentToken", &e,
					  &reply, "")
		     : -ENOMEM;
	const char *tok = NULL;
	if (r >= 0)
		r = sd_bus_message_read(reply, "s", &tok);
	if (r < 0) {
		if (sd_bus_error_has_name(&e, SD_BUS_ERROR_ACCESS_DENIED) && e.message &&
		    strncmp(e.message, "Rejected", 8))
			fprintf(stderr,
				"warrenctl: %s: sandbox %s is not yours: only its creator and root "
				"may reach its agent\n",
				cmd_name, id);
		else if (sd_bus_error_has_name(&e, SD_BUS_ERROR_UNKNOWN_OBJECT) ||
			 sd_bus_error_has_name(&e, SD_BUS_ERROR_UNKNOWN_METHOD))
			fprintf(stderr, "warrenctl: %s: no sandbox %s (it is gone)\n", cmd_name,
				id);
		else
			fail(r, &e, cmd_name);
		rc = 1;
		goto out;
	}
	token = strdup(tok);
	r = get_string(MANAGER_PATH, MANAGER_IFACE, "GatewayURL", &url);
	if (!token || r < 0) {
		fprintf(stderr, "warrenctl: %s: the gateway's URL: %s\n", cmd_name,
			strerror(!token ? ENOMEM : -r));
		rc = 1;
		goto out;
	}
	if (agent_target_init(t, url, id, token) < 0) {
		fprintf(stderr,
			"warrenctl: %s: the gateway's URL %s is not http://IPv4:PORT or "
			"http://localhost:PORT, which warrenctl can reach\n",
			cmd_name, url);
		rc = 1;
	}
out:
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	free(url);
	free(path);
	free(id);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&e);
	return rc;
}

/* cp SRC DST: one side ID:PATH (ctl-cp.c) */
static int
cmd_cp(int argc, char **argv)
{
	struct cp_spec s;
	if (ctl_cp_parse(argv[0], argv[1], &s) < 0)
		return 2;
	struct agent_target t;
	int r = agent_target_get(s.id, &t);
	if (r)
		return r;
	r = ctl_cp_run(&t, &s);
	explicit_bzero(&t, sizeof t);
	if (!r && json)
		printf("{\"copied\":true}\n");
	return r;
}

/* exec -i/-t: through the agent (ctl-exec-tty.c) */
static int
exec_agent(int argc, char **argv)
{
	if (opt("timeout")) {
		fprintf(stderr, "warrenctl: exec: --timeout is for exec without -i/-t\n");
		return 2;
	}
	struct agent_target t;
	int r = agent_target_get(argv[0], &t);
	if (r)
		return r;
	r = ctl_exec_agent(&t, argv + 1, flag("interactive"), flag("tty"));
	explicit_bzero(&t, sizeof t);
	return r;
}

static int
cmd_exec(int argc, char **argv)
{
	if (flag("interactive") || flag("tty"))
		return exec_agent(argc, argv);
	char *id = NULL;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	char *path = sandbox_path(id);
	/* --timeout=SECONDS: ExecWithOptions' timeout_ms (the supervisor's default otherwise) */
	unsigned timeout_ms = 0;
	if (opt("timeout")) {
		double sec = atof(opt("timeout"));
		if (!(sec > 0) || sec > 600) {
			fprintf(stderr,
				"warrenctl: exec: --timeout is a number of seconds, 0-600\n");
			free(path);
			free(id);
			return 2;
		}
		timeout_ms = (unsigned)(sec * 1000 + 0.5);
		if (!timeout_ms)
			timeout_ms = 1;
	}
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, path, SANDBOX_IFACE,
				       timeout_ms ? "ExecWithOptions" : "Exec");
	sd_bus_message_append_strv(m, argv + 1);
	if (timeout_ms)
		sd_bus_message_append(m, "a{sv}", 1, "timeout_ms", "u", timeout_ms);
	/* the call outlives the command's own limit: its end is the supervisor's to name */
	uint64_t wait_us = ((timeout_ms ? timeout_ms : 60000) + 60000) * 1000ull;
	int r = sd_bus_call(bus, m, wait_us, &e, &reply);
	free(path);
	free(id);
	sd_bus_message_unref(m);
	if (r < 0)
		return fail(r, &e, "exec");
	int status;
	const void *out, *err;
	size_t out_len, err_len;
	sd_bus_message_read(reply, "i", &status);
	sd_bus_message_read_array(reply, 'y', &out, &out_len);
	sd_bus_message_read_array(reply, 'y', &err, &err_len);
	fwrite(out, 1, out_len, stdout);
	fwrite(err, 1, err_len, stderr);
	sd_bus_message_unref(reply);
	return status;
}

static int
print_ids(sd_bus_message *reply)
{
	char **ids = NULL;
	sd_bus_message_read_strv(reply, &ids);
	if (json)
		printf("[");
	for (char **i = ids; i && *i; i++) {
		if (json) {
			printf(i == ids ? "" : ",");
			json_str(*i);
		} else
			printf("%s\n", *i);
		free(*i);
	}
	if (json)
		printf("]\n");
	free(ids);
	return 0;
}

static int
cmd_snapshot(int argc, char **argv)
{
	char *id = NULL;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	char *path = sandbox_path(id);
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, path, SANDBOX_IFACE, "Snapshot");
	sd_bus_message_append(m, "s", argv[1]);
	int r = call_with_progress(m, &e, &reply, NULL);
	free(path);
	free(id);
	if (r < 0)
		return fail(r, &e, "snapshot");
	const char *tag;
	uint64_t size;
	sd_bus_message_read(reply, "st", &tag, &size);
	if (json) {
		printf("{\"tag\":");
		json_str(tag);
		printf(",\"size\":%llu}\n", (unsigned long long)size);
	} else
		printf("%s %llu\n", tag, (unsigned long long)size);
	return 0;
}

static int
cmd_fork(int argc, char **argv)
{
	uint64_t count;
	if (parse_u64(argv[1], "COUNT", 1000, &count) < 0)
		return 2;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ForkTag");
	sd_bus_message_append(m, "su", argv[0], (uint32_t)count);
	int r = call_with_progress(m, &e, &reply, NULL);
	return r < 0 ? fail(r, &e, "fork") : print_ids(reply);
}

static int
cmd_branch(int argc, char **argv)
{
	uint64_t count;
	char *id = NULL;
	if (parse_u64(argv[2], "COUNT", 1000, &count) < 0)
		return 2;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
				       "BranchSandbox");
	sd_bus_message_append(m, "ssu", id, argv[1], (uint32_t)count);
	free(id);
	int r = call_with_progress(m, &e, &reply, NULL);
	return r < 0 ? fail(r, &e, "branch") : print_ids(reply);
}

static int
cmd_tags(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTags", &e,
				   &reply, "");
	if (r < 0)
		return fail(r, &e, "tags");
	sd_bus_message_enter_container(reply, 'a', "(sstbts)");
	const char *name, *tmpl, *parent;
	uint64_t size, created;
	int compressed, first = 1;
	if (!json)
		printf("%-16s %-10s %10s %-10s %s\n", "TAG", "TEMPLATE", "SIZE", "COMPRESSED",
		       "PARENT");
	else
		printf("[");
	while (sd_bus_message_read(reply, "(sstbts)", &name, &tmpl, &size, &compressed, &created,
				   &parent) > 0) {
		if (json) {
			printf("%s{\"tag\":", first ? "" : ",");
			json_str(name);
			printf(",\"template\":");
			json_str(tmpl);
			printf(",\"size\":%llu,\"compressed\":%s,\"created_usec\":%llu,\"parent\":",
			       (unsigned long long)size, compressed ? "true" : "false",
			       (unsigned long long)created);
			json_str(parent);
			printf("}");
		} else
			printf("%-16s %-10s %7llu KiB %-10s %s\n", name, tmpl,
			       (unsigned long long)(size >> 10), compressed ? "yes" : "no", parent);
		first = 0;
	}
	if (json)
		printf("]\n");
	sd_bus_message_unref(reply);
	return 0;
}

static int
cmd_rmtag(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveTag", &e,
				   NULL, "s", argv[0]);
	return r < 0 ? fail(r, &e, "rmtag") : 0;
}

/* ---- templates ----------------------------------------------------------------------------- */

static int
cmd_template_list(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTemplates", &e,
				   &reply, "");
	if (r < 0)
		return fail(r, &e, "listing templates");
	sd_bus_message_enter_container(reply, 'a', "(ssasqtb)");
	int first = 1;
	if (json)
		printf("[");
	else
		printf("%-16s %5s %8s  %-5s  %s\n", "NAME", "PORT", "MEMORY", "BUILT", "COMMAND");
	while (sd_bus_message_enter_container(reply, 'r', "ssasqtb") > 0) {
		const char *name, *rootfs;
		char **av = NULL;
		uint16_t port;
		uint64_t mem;
		int built;
		sd_bus_message_read(reply, "ss", &name, &rootfs);
		sd_bus_message_read_strv(reply, &av);
		sd_bus_message_read(reply, "qtb", &port, &mem, &built);
		sd_bus_message_exit_container(reply);
		if (json) {
			printf("%s{\"name\":", first ? "" : ",");
			json_str(name);
			printf(",\"rootfs\":");
			json_str(rootfs);
			printf(",\"argv\":[");
			for (char **a = av; a && *a; a++) {
				printf(a == av ? "" : ",");
				json_str(*a);
			}
			printf("],\"port\":%u,\"memory_limit\":%llu,\"built\":%s}", port,
			       (unsigned long long)mem, built ? "true" : "false");
		} else {
			printf("%-16s %5u %5lluMiB  %-5s ", name, port,
			       (unsigned long long)(mem >> 20), built ? "yes" : "no");
			for (char **a = av; a && *a; a++)
				printf(" %s", *a);
			printf("\n");
		}
		for (char **a = av; a && *a; a++)
			free(*a);
		free(av);
		first = 0;
	}
	if (json)
		printf("]\n");
	sd_bus_message_unref(reply);
	return 0;
}

static int
cmd_template_show(int argc, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "GetTemplate", &e,
				   &reply, "s", argv[0]);
	if (r < 0)
		return fail(r, &e, "template show");
	if (json) {
		json_value(reply);
		printf("\n");
		sd_bus_message_unref(reply);
		return 0;
	}
	/* name: value lines, machinectl show's way */
	sd_bus_message_enter_container(reply, 'a', "{sv}");
	while (sd_bus_message_enter_container(reply, 'e', "sv") > 0) {
		const char *k;
		sd_bus_message_read(reply, "s", &k);
		printf("%s=", k);
		char type;
		const char *contents;
		sd_bus_message_peek_type(reply, &type, &contents);
		sd_bus_message_enter_container(reply, 'v', contents);
		if (!strcmp(contents, "as")) {
			char **v = NULL;
			sd_bus_message_read_strv(reply, &v);
			for (char **a = v; a && *a; a++) {
				printf("%s%s", a == v ? "" : " ", *a);
				free(*a);
			}
			free(v);
		} else
			json_value(reply);
		sd_bus_message_exit_container(reply);
		sd_bus_message_exit_container(reply);
		printf("\n");
	}
	sd_bus_message_unref(reply);
	return 0;
}

static int
cmd_template_rm(int argc, char **argv)
{
	int rc = 0;
	for (int i = 0; i < argc; i++) {
		sd_bus_error e = SD_BUS_ERROR_NULL;
		int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					   "RemoveTemplate", &e, NULL, "s", argv[i]);
		if (r < 0)
			rc = fail(r, &e, "template rm");
		sd_bus_error_free(&e);
	}
	return rc;
}

/* The options add and import share: port, memory, env, cwd, user, outbound, idle, warm,
 * standby; appended to the open a{sv}. */
static int
append_template_options(sd_bus_message *m)
{
	uint64_t v;
	if (opt("memory")) {
		if (parse_u64(opt("memory"), "--memory (MiB)", 1 << 24, &v) < 0)
			return -1;
		sd_bus_message_append(m, "{sv}", "memory_limit", "t", v << 20);
	}
	if (opt("cwd"))
		sd_bus_message_append(m, "{sv}", "cwd", "s", opt("cwd"));
	if (opt("user"))
		sd_bus_message_append(m, "{sv}", "user", "s", opt("user"));
	int ei = opt_index("env");
	if (ei >= 0 && opt_n[ei]) {
		sd_bus_message_open_container(m, 'e', "sv");
		sd_bus_message_append(m, "s", "env");
		sd_bus_message_open_container(m, 'v', "as");
		opt_list[ei][opt_n[ei]] = NULL;
		sd_bus_message_append_strv(m, opt_list[ei]);
		sd_bus_message_close_container(m);
		sd_bus_message_close_container(m);
	}
	if (flag("outbound"))
		sd_bus_message_append(m, "{sv}", "allow_outbound", "b", 1);
	if (opt("egress"))
		sd_bus_message_append(m, "{sv}", "egress", "s", opt("egress"));
	if (opt("idle-ms")) {
		if (parse_u64(opt("idle-ms"), "--idle-ms", UINT32_MAX, &v) < 0)
			return -1;
		sd_bus_message_append(m, "{sv}", "idle_ms", "u", (uint32_t)v);
	}
	if (flag("warm"))
		sd_bus_message_append(m, "{sv}", "warm", "b", 1);
	if (opt("standby")) {
		if (parse_u64(opt("standby"), "--standby", 16, &v) < 0)
			return -1;
		sd_bus_message_append(m, "{sv}", "standby", "u", (uint32_t)v);
	}
	return 0;
}

static int
cmd_template_add(int argc, char **argv)
{
	uint64_t port = 0, mem = 128;
	if (!opt("port") || parse_u64(opt("port"), "--port", 65535, &port) < 0 || !port) {
		fprintf(stderr, "warrenctl: template add: --port PORT (1-65535) is needed\n");
		return 2;
	}
	if (argc < 3) {
		fprintf(stderr, "warrenctl: template add: give the command after the root "
				"filesystem (NAME ROOTFS [--] CMD [ARG...])\n");
		return 2;
	}
	if (opt("memory") && parse_u64(opt("memory"), "--memory (MiB)", 1 << 24, &mem) < 0)
		return 2;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
				       "AddTemplate");
	sd_bus_message_append(m, "ss", argv[0], argv[1]);
	sd_bus_message_append_strv(m, argv + 2);
	sd_bus_message_append(m, "qt", (uint16_t)port, mem << 20);
	sd_bus_message_open_container(m, 'a', "{sv}");
	const char *saved = opt_val[opt_index("memory")];
	opt_val[opt_index("memory")] = NULL; /* given positionally above */
	int r = append_template_options(m);
	opt_val[opt_index("memory")] = saved;
	if (r < 0)
		return 2;
	sd_bus_message_close_container(m);
	r = sd_bus_call(bus, m, 0, &e, NULL);
	sd_bus_message_unref(m);
	return r < 0 ? fail(r, &e, "template add") : 0;
}

/* SOURCE: oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:REF], or a path (a
 * directory is an OCI layout, a file an oci-archive). */
static int
cmd_template_import(int argc, char **argv)
{
	const char *name = argv[0];
	char *src = strdup(argv[1]), *path = src, *ref = NULL;
	const char *format = NULL;
	if (!src) {
		fprintf(stderr, "warrenctl: template import: out of memory\n");
		return 1;
	}
	static const char *const formats[] = {"oci", "oci-archive", "docker-archive"};
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(formats[i]);
		if (!strncmp(src, formats[i], l) && src[l] == ':') {
			format = formats[i];
			path = src + l + 1;
			char *colon = strrchr(path, ':');
			if (colon && !strchr(colon, '/')) {
				*colon = 0;
				ref = colon + 1;
			}
		}
	}
	if (opt("ref"))
		ref = (char *)opt("ref");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "warrenctl: template import: cannot open %s: %m\n", path);
		return 1;
	}
	if (!format)
		format = S_ISDIR(st.st_mode) ? "oci" : "oci-archive";
	/* A layout directory goes as a tar stream (an oci-archive is a tar of a layout), read
	 * here with the caller's rights: Warren's unpacker has none of its own on the caller's
	 * files (umoci and skopeo write layouts 0600). */
	pid_t tar = -1;
	if (!strcmp(format, "oci") && S_ISDIR(st.st_mode) && !flag("no-stream")) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0 || (tar = fork()) < 0) {
			fprintf(stderr, "warrenctl: template import: %m\n");
			return 1;
		}
		if (tar == 0) {
			dup2(p[1], 1);
			execlp("tar", "tar", "-C", path, "-cf", "-", ".", (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		close(fd);
		fd = p[0];
		format = "oci-archive";
	}
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
				       "ImportTemplate");
	sd_bus_message_append(m, "shs", name, fd, format);
	if (tar > 0) {
		/* the message holds its own copy: ours closed, a refused import closes the pipe's
		 * last reader and tar ends (EPIPE) instead of waiting on a full pipe for ever */
		close(fd);
		fd = -1;
	}
	sd_bus_message_open_container(m, 'a', "{sv}");
	if (ref && *ref)
		sd_bus_message_append(m, "{sv}", "reference", "s", ref);
	if (flag("no-vm-image"))
		sd_bus_message_append(m, "{sv}", "vm_image", "b", 0);
	uint64_t port;
	if (opt("port")) {
		if (parse_u64(opt("port"), "--port", 65535, &port) < 0 || !port)
			return 2;
		sd_bus_message_append(m, "{sv}", "port", "q", (uint16_t)port);
	}
	int ci = opt_index("cmd");
	if (opt_n[ci]) {
		/* --cmd ARG repeated, podman's --entrypoint/CMD in one list */
		sd_bus_message_open_container(m, 'e', "sv");
		sd_bus_message_append(m, "s", "argv");
		sd_bus_message_open_container(m, 'v', "as");
		opt_list[ci][opt_n[ci]] = NULL;
		sd_bus_message_append_strv(m, opt_list[ci]);
		sd_bus_message_close_container(m);
		sd_bus_message_close_container(m);
	}
	if (append_template_options(m) < 0)
		return 2;
	sd_bus_message_close_container(m);
	int r = call_with_progress(m, &e, &reply, name);
	/* The sent message still holds its copy of the pipe's read end: while it lives, tar of a
	 * refused import blocks on a full pipe and the wait below never returns. */
	sd_bus_message_unref(m);
	close(fd);
	free(src);
	if (tar > 0) {
		/* refused or failed: nobody reads the rest of the stream, tar need not finish it */
		if (r < 0)
			kill(tar, SIGTERM);
		waitpid(tar, NULL, 0);
	}
	if (r < 0)
		return fail(r, &e, "template import");
	if (json) {
		json_value(reply);
		printf("\n");
	} else {
		const char *k;
		printf("%s", name);
		sd_bus_message_enter_container(reply, 'a', "{sv}");
		while (sd_bus_message_enter_container(reply, 'e', "sv") > 0) {
			sd_bus_message_read(reply, "s", &k);
			printf(" %s=", k);
			json_value(reply);
			sd_bus_message_exit_container(reply);
		}
		printf("\n");
	}
	sd_bus_message_unref(reply);
	return 0;
}

/* ---- the command table --------------------------------------------------------------------- */

/* apikey: E2B API keys for warren-e2b-api, kept hashed in a root-owned file (api-keys.h).
 * Root only: the file is root's; create prints the key once, nothing else ever shows it. */
static int
apikey_read(const char *path, struct api_key *keys, size_t *n)
{
	int r = api_keys_load(path, keys, API_KEYS_MAX, n);
	if (r == -ENOENT) {
		*n = 0;
		return 0;
	}
	if (r < 0)
		fprintf(stderr, "warrenctl: %s: %s%s\n", path, strerror(-r),
			r == -EPERM ? " (it must be root's, 0640 at most)" : "");
	return r;
}

/* the whole file again: a temporary beside it, 0640 root:warren-e2b, fsync, rename */
static int
apikey_write(const char *path, const struct api_key *keys, size_t n)
{
	_cleanup_free_ char *text = api_keys_format(keys, n);
	char tmp[4096];
	if (!text || snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
		return -ENOMEM;
	int fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	struct group *g = getgrnam("warren-e2b");
	int r = 0;
	size_t len = strlen(text);
	if (fchown(fd, 0, g ? g->gr_gid : 0) < 0 || fchmod(fd, 0640) < 0 ||
	    write(fd, text, len) != (ssize_t)len || fsync(fd) < 0 || rename(tmp, path) < 0)
		r = -errno;
	close(fd);
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int
cmd_apikey(const char *path, const char *what, const char *arg)
{
	if (geteuid() != 0) {
		fprintf(stderr, "warrenctl apikey: run as root (the key file is root's)\n");
		return 1;
	}
	if (!what || (strcmp(what, "create") && strcmp(what, "list") && strcmp(what, "revoke")) ||
	    (!strcmp(what, "revoke") && !arg)) {
		fprintf(stderr,
			"warrenctl apikey create [NAME] | list | revoke ID  [--api-keys PATH]\n");
		return 2;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST)
		return fail(-errno, NULL, "creating the key file's directory");
	/* one writer at a time: a lock file beside the key file, root's */
	char lock[4200];
	snprintf(lock, sizeof lock, "%s.lock", path);
	_cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0)
		return fail(-errno, NULL, "locking the key file");
	struct api_key *keys = calloc(API_KEYS_MAX + 1, sizeof *keys);
	size_t n = 0;
	if (!keys)
		return 1;
	int r = apikey_read(path, keys, &n);
	if (r < 0)
		return 1;
	if (!strcmp(what, "list")) {
		if (json)
			printf("[");
		else
			printf("%-16s %-20s %s\n", "ID", "CREATED", "NAME");
		for (size_t i = 0; i < n; i++) {
			char when[32];
			time_t t = (time_t)keys[i].created;
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
			if (json)
				printf("%s{\"id\":\"%s\",\"created\":\"%s\",\"name\":\"%s\"}",
				       i ? "," : "", keys[i].id, when, keys[i].name);
			else
				printf("%-16s %-20s %s\n", keys[i].id, when, keys[i].name);
		}
		if (json)
			printf("]\n");
		free(keys);
		return 0;
	}
	if (!strcmp(what, "revoke")) {
		size_t i;
		for (i = 0; i < n && strcmp(keys[i].id, arg); i++)
			;
		if (i == n) {
			fprintf(stderr,
				"warrenctl apikey: no key with id %s (warrenctl apikey list)\n",
				arg);
			free(keys);
			return 1;
		}
		memmove(keys + i, keys + i + 1, (n - i - 1) * sizeof *keys);
		r = apikey_write(path, keys, n - 1);
		free(keys);
		return r < 0 ? fail(r, NULL, "writing the key file") : 0;
	}
	if (n >= API_KEYS_MAX) {
		fprintf(stderr, "warrenctl apikey: %d keys already; revoke one first\n",
			API_KEYS_MAX);
		free(keys);
		return 1;
	}
	const char *name = arg ? arg : "";
	char key[API_KEY_LEN + 1];
	r = api_key_generate(key, &keys[n], name);
	if (r == -EINVAL) {
		fprintf(stderr,
			"warrenctl apikey: a name is [A-Za-z0-9._-], at most %d characters\n",
			API_KEY_NAME_MAX);
		free(keys);
		return 2;
	}
	if (r >= 0)
		r = apikey_write(path, keys, n + 1);
	if (r < 0) {
		free(keys);
		return fail(r, NULL, "writing the key file");
	}
	if (json)
		printf("{\"id\":\"%s\",\"key\":\"%s\"}\n", keys[n].id, key);
	else
		printf("%s\n", key);
	if (!json)
		fprintf(stderr, "API key %s created; it is shown only now (E2B_API_KEY=...)\n",
			keys[n].id);
	explicit_bzero(key, sizeof key);
	free(keys);
	return 0;
}

/* apikey create [NAME] | list | revoke ID: no bus, the key file itself (root only) */
static int
cmd_apikey_main(int argc, char **argv)
{
	const char *path = opt("api-keys") ? opt("api-keys") : API_KEYS_DEFAULT_PATH;
	return cmd_apikey(path, argv[0], argc > 1 ? argv[1] : NULL);
}

/* logs [-f] ID: the sandbox's console log through the fd OpenLogs answers (a sealed copy, or
 * with -f a pipe that goes on with new output until the sandbox goes or ^C). */
static int
cmd_logs(int argc, char **argv)
{
	(void)argc;
	bool follow = flag("follow");
	char *id = NULL;
	if (resolve_id(argv[0], &id) < 0)
		return 1;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, "OpenLogs", &e, &reply,
				   "a{sv}", 1, "follow", "b", follow);
	free(path);
	free(id);
	if (r < 0)
		return fail(r, &e, "logs");
	int fd;
	r = sd_bus_message_read(reply, "h", &fd);
	if (r < 0)
		return fail(r, NULL, "logs");
	char buf[65536];
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (fwrite(buf, 1, (size_t)k, stdout) != (size_t)k)
			break;
		if (follow)
			fflush(stdout);
	}
	sd_bus_message_unref(reply);
	return 0;
}

static const struct option no_opts[] = {{}};
static const struct option exec_opts[] = {{"timeout", required_argument, NULL, 0},
					  {"interactive", no_argument, NULL, 'i'},
					  {"tty", no_argument, NULL, 't'},
					  {}};
static const struct option logs_opts[] = {{"follow", no_argument, NULL, 'f'}, {}};
static const struct option list_opts[] = {{"format", required_argument, NULL, 0},
					  {"quiet", no_argument, NULL, 0},
					  {"all", no_argument, NULL, 0},
					  {}};
static const struct option create_opts[] = {{"wait", no_argument, NULL, 0},
					    {"backend", required_argument, NULL, 0},
					    {"egress", required_argument, NULL, 0},
					    {}};
static const struct option apikey_opts[] = {{"api-keys", required_argument, NULL, 0}, {}};
static const struct option timeout_opts[] = {{"pause", no_argument, NULL, 0}, {}};
static const struct option reclaim_opts[] = {{"no-zswap", no_argument, NULL, 0}, {}};
#define TEMPLATE_OPTS                                                                              \
	{"port", required_argument, NULL, 0}, {"memory", required_argument, NULL, 0},              \
		{"env", required_argument, NULL, 0}, {"cwd", required_argument, NULL, 0},          \
		{"user", required_argument, NULL, 0}, {"outbound", no_argument, NULL, 0},          \
		{"idle-ms", required_argument, NULL, 0}, {"warm", no_argument, NULL, 0},           \
		{"egress", required_argument, NULL, 0},                                            \
	{                                                                                          \
		"standby", required_argument, NULL, 0                                              \
	}
static const struct option add_opts[] = {TEMPLATE_OPTS, {}};
static const struct option import_opts[] = {TEMPLATE_OPTS,
					    {"cmd", required_argument, NULL, 0},
					    {"ref", required_argument, NULL, 0},
					    {"no-vm-image", no_argument, NULL, 0},
					    {"no-stream", no_argument, NULL, 0},
					    {}};

static const struct command commands[] = {
	{"status", "", "helpers, versions, namespace pool, backends, reclaim", no_opts, 0, 0,
	 cmd_status},
	{"list", "[--format FMT|json] [--quiet]",
	 "sandboxes: id, template, backend, state, age, memory, reason", list_opts, 0, 0, cmd_list},
	{"ps", "[--format FMT|json] [--quiet]", "the same as list", list_opts, 0, 0, cmd_list},
	{"inspect", "ID...", "every property of sandboxes, as JSON", no_opts, 1, -1, cmd_inspect},
	{"create", "TEMPLATE [--wait] [--backend gvisor|microvm] [--egress POLICY]",
	 "create a sandbox; prints its id and URL (POLICY: off, on, or CIDR[:PORT],...)",
	 create_opts, 1, 1, cmd_create},
	{"destroy", "ID...", "destroy sandboxes", no_opts, 1, -1, cmd_destroy},
	{"rm", "ID...", "the same as destroy", no_opts, 1, -1, cmd_destroy},
	{"exec", "[--timeout S | -i] [-t] ID [--] CMD [ARG...]",
	 "run a command inside; exits with its status (a time limit of S seconds, 60 by default);\n"
	 "      -i streams stdin to it, -t gives it a PTY of your terminal's size (both through\n"
	 "      the sandbox's agent, with no time limit)",
	 exec_opts, 2, -1, cmd_exec},
	{"cp", "SRC DST",
	 "copy a regular file into or out of a sandbox: one side is ID:PATH, '-' is\n"
	 "      stdin/stdout (through the sandbox's agent)",
	 no_opts, 2, 2, cmd_cp},
	{"logs", "[-f|--follow] ID", "the sandbox's console (its program's stdout and stderr)",
	 logs_opts, 1, 1, cmd_logs},
	{"freeze", "ID", "freeze a sandbox (a request thaws it)", no_opts, 1, 1, cmd_freeze},
	{"thaw", "ID", "thaw a frozen sandbox", no_opts, 1, 1, cmd_thaw},
	{"timeout", "ID SECONDS [--pause]",
	 "destroy the sandbox (pause it with --pause) SECONDS from now; 0 clears", timeout_opts, 2,
	 2, cmd_timeout},
	{"egress", "ID POLICY",
	 "what the sandbox may reach: off, on (the world less private ranges), or only\n"
	 "      CIDR[:PORT],... (at most 16; a listed private range is reachable)",
	 no_opts, 2, 2, cmd_egress},
	{"snapshot", "ID TAG", "checkpoint a running sandbox into a tag (it goes on)", no_opts, 2,
	 2, cmd_snapshot},
	{"fork", "TAG COUNT", "COUNT children from the tag's image", no_opts, 2, 2, cmd_fork},
	{"branch", "ID TAG COUNT", "snapshot ID into TAG and fork COUNT children from it", no_opts,
	 3, 3, cmd_branch},
	{"tags", "", "snapshot tags", no_opts, 0, 0, cmd_tags},
	{"rmtag", "TAG", "remove a tag", no_opts, 1, 1, cmd_rmtag},
	{"reclaim", "show | setup [MIB] [--no-zswap] | undo", "swap file + zswap for reclaim",
	 reclaim_opts, 0, 2, cmd_reclaim},
	{"apikey", "create [NAME] | list | revoke ID [--api-keys PATH]",
	 "E2B API keys for warren-e2b-api (root; the key is shown once)", apikey_opts, 1, 2,
	 cmd_apikey_main},
	{"templates", "", "the same as template list", no_opts, 0, 0, cmd_template_list},
	{"rmtemplate", "NAME", "the same as template rm", no_opts, 1, 1, cmd_template_rm},
	{"template list", "", "templates: name, port, memory, built, command", no_opts, 0, 0,
	 cmd_template_list},
	{"template show", "NAME", "a template's options (GetTemplate)", no_opts, 1, 1,
	 cmd_template_show},
	{"template rm", "NAME...", "remove templates you added or imported (with their trees)",
	 no_opts, 1, -1, cmd_template_rm},
	{"template add",
	 "NAME ROOTFS --port PORT [--memory MIB] [--env K=V]... [--cwd DIR] [--user UID[:GID]]\n"
	 "                  [--outbound|--egress POLICY] [--idle-ms MS] [--warm] [--standby N]\n"
	 "                  [--] CMD [ARG...]",
	 "add a template from a root filesystem under the templates directory", add_opts, 3, -1,
	 cmd_template_add},
	{"template import",
	 "NAME SOURCE [--cmd ARG]... [--port PORT] [--memory MIB] [--env K=V]... [--cwd DIR]\n"
	 "                  [--user UID[:GID]] [--ref TAG] [--no-vm-image] [--outbound] [--warm] "
	 "...\n"
	 "      SOURCE: oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:REF], or a "
	 "path",
	 "import an OCI image as a template (the image's command, env, working directory, user\n"
	 "      and exposed port become the template's unless given)",
	 import_opts, 2, 2, cmd_template_import},
};

static void
command_help(const struct command *c, FILE *f)
{
	fprintf(f, "Usage: warrenctl [--json] %s %s\n  %s\n", c->name, c->args, c->help);
}

static void
usage(FILE *f)
{
	fprintf(f, "Usage: warrenctl [--json] [--help] [--version] COMMAND [OPTIONS] [ARGS]\n\n"
		   "Commands (each takes --help):\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char head[64];
		snprintf(head, sizeof head, "%s", commands[i].name);
		const char *nl = strchr(commands[i].help, '\n');
		fprintf(f, "  %-17s %.*s\n", head,
			nl ? (int)(nl - commands[i].help) : (int)strlen(commands[i].help),
			commands[i].help);
	}
	fprintf(f, "\nSandbox IDs may be given by a unique prefix. --json makes every command's "
		   "output JSON.\n");
}

/* Options of a command, anywhere before "--"; the rest are its arguments. */
static int
run_command(const struct command *c, int argc, char **argv)
{
	cur = c;
	struct option all[MAX_OPTS + 3];
	size_t n = 0;
	for (; c->opts[n].name && n < MAX_OPTS; n++) {
		all[n] = c->opts[n];
		all[n].flag = NULL;
		all[n].val = 1000 + (int)n;
	}
	all[n++] = (struct option){"help", no_argument, NULL, 'h'};
	all[n++] = (struct option){"json", no_argument, NULL, 'j'};
	all[n] = (struct option){};
	/* exec's command is everything after the id: stop at the first non-option (template add
	 * takes its command after "--", which ends the options anyway) */
	bool stop_at_args = !strcmp(c->name, "exec");
	/* a short form where the table gives one (logs -f): its letter maps to its index */
	char shorts[2 * MAX_OPTS + 4] = "";
	snprintf(shorts, sizeof shorts, "%shj", stop_at_args ? "+" : "");
	for (size_t i = 0; c->opts[i].name && i < MAX_OPTS; i++)
		if (c->opts[i].val > ' ' && c->opts[i].val < 127 &&
		    c->opts[i].has_arg == no_argument) {
			size_t l = strlen(shorts);
			shorts[l] = (char)c->opts[i].val;
			shorts[l + 1] = 0;
		}
	optind = 0; /* 0, not 1: GNU getopt re-reads the ordering ("+") of this optstring */
	opterr = 0;
	int o;
	while ((o = getopt_long(argc, argv, shorts, all, NULL)) >= 0) {
		for (size_t i = 0; o > ' ' && o < 127 && o != 'h' && o != 'j' && c->opts[i].name;
		     i++)
			if (c->opts[i].val == o)
				o = 1000 + (int)i;
		if (o == 'h') {
			command_help(c, stdout);
			return 0;
		}
		if (o == 'j') {
			json = true;
			continue;
		}
		if (o >= 1000 && o < 1000 + MAX_OPTS) {
			int i = o - 1000;
			opt_seen[i]++;
			opt_val[i] = optarg;
			if (optarg && opt_n[i] < 63)
				opt_list[i][opt_n[i]++] = optarg;
			continue;
		}
		if (optopt)
			fprintf(stderr, "warrenctl: %s: option -%c is unknown or needs a value\n",
				c->name, optopt);
		else
			fprintf(stderr, "warrenctl: %s: unknown option or missing value: %s\n",
				c->name, argv[optind - 1]);
		command_help(c, stderr);
		return 2;
	}
	char **args = argv + optind;
	int nargs = argc - optind;
	/* exec ID [--] CMD: options come before the id (podman exec's way) */
	if (stop_at_args && nargs >= 2 && !strcmp(args[1], "--")) {
		args[1] = args[0];
		args++;
		nargs--;
	}
	if (nargs < c->min_args || (c->max_args >= 0 && nargs > c->max_args)) {
		fprintf(stderr, "warrenctl: %s: %s\n", c->name,
			nargs < c->min_args ? "missing arguments" : "too many arguments");
		command_help(c, stderr);
		return 2;
	}
	cmd_name = c->name;
	if (c->fn == cmd_apikey_main)
		return c->fn(nargs, args);
	int r = sd_bus_open_system(&bus);
	if (r < 0) {
		fprintf(stderr,
			"warrenctl: %s: cannot reach the system bus (%s): is dbus running?\n",
			c->name, strerror(-r));
		return 1;
	}
	return c->fn(nargs, args);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"help", no_argument, NULL, 'h'},
					     {"version", no_argument, NULL, 'V'},
					     {}};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hj", opts, NULL)) >= 0) {
		if (c == 'j')
			json = true;
		else if (c == 'V') {
			printf(json ? "{\"version\":\"%s\"}\n" : "warrenctl %s\n", WARREN_VERSION);
			return 0;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "warrenctl: unknown option %s\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	char name[64];
	snprintf(name, sizeof name, "%s", argv[optind]);
	int skip = 1;
	if (!strcmp(name, "template")) {
		if (optind + 1 >= argc || argv[optind + 1][0] == '-') {
			if (optind + 1 < argc && (!strcmp(argv[optind + 1], "--help") ||
						  !strcmp(argv[optind + 1], "-h"))) {
				usage(stdout);
				return 0;
			}
			fprintf(stderr, "warrenctl: template: add, list, show, rm or import\n");
			return 2;
		}
		snprintf(name, sizeof name, "template %s", argv[optind + 1]);
		skip = 2;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(commands[i].name, name))
			return run_command(&commands[i], argc - optind - skip + 1,
					   argv + optind + skip - 1);
	fprintf(stderr, "warrenctl: unknown command '%s'\n", name);
	usage(stderr);
	return 2;
}

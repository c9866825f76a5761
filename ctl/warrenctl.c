/* warrenctl: a thin command-line client of org.warren.Warren1 on the system bus. Every command
 * is one or two D-Bus calls; human output by default, --json for scripts. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define SANDBOX_IFACE "org.warren.Warren1.Sandbox"

static bool json;
static unsigned exec_timeout_ms; /* exec --timeout=SECONDS: ExecWithOptions timeout_ms */
static void print_reclaim(void);
static sd_bus *bus;

static int
fail(int r, sd_bus_error *e, const char *what)
{
	fprintf(stderr, "warrenctl: %s: %s\n", what,
		e && e->message ? e->message : strerror(r < 0 ? -r : r));
	return 1;
}

static void
json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static char *
sandbox_path(const char *id)
{
	char *p = NULL;
	sd_bus_path_encode("/org/warren/Warren1/sandbox", id, &p);
	return p;
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
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, prop, NULL, 'u', &v);
	return v;
}

static int
cmd_status(void)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *version = NULL, *url = NULL;
	int r = get_string(MANAGER_PATH, MANAGER_IFACE, "Version", &version);
	if (r < 0)
		return fail(r, NULL, "is warren-supervisor running? reading Version");
	get_string(MANAGER_PATH, MANAGER_IFACE, "GatewayURL", &url);
	uint32_t size = get_u32("PoolSize"), freec = get_u32("PoolFree"), count = get_u32("SandboxCount");
	if (json)
		printf("{\"version\":\"%s\",\"gateway_url\":\"%s\",\"pool_size\":%u,\"pool_free\":%u,"
		       "\"sandboxes\":%u,\"helpers\":[",
		       version, url ? url : "", size, freec, count);
	else
		printf("Warren %s\n  gateway:    %s\n  pool:       %u slots, %u free\n  sandboxes:  %u\n",
		       version, url ? url : "", size, freec, count);
	r = sd_bus_get_property(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Helpers", &e, &reply,
				"a(sbs)");
	if (r < 0)
		return fail(r, &e, "Helpers");
	sd_bus_message_enter_container(reply, 'a', "(sbs)");
	const char *name, *ver;
	int up, first = 1;
	while (sd_bus_message_read(reply, "(sbs)", &name, &up, &ver) > 0) {
		if (json) {
			printf("%s{\"name\":\"%s\",\"up\":%s,\"version\":\"%s\"}", first ? "" : ",",
			       name, up ? "true" : "false", ver);
		} else
			printf("  %-11s %s%s%s\n", name, up ? "up" : "DOWN", up ? ", version " : "",
			       up ? ver : "");
		first = 0;
	}
	sd_bus_message_unref(reply);
	reply = NULL;
	r = sd_bus_get_property(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Backends", &e, &reply,
				"as");
	if (json)
		printf("],\"backends\":[");
	else
		printf("  backends:  ");
	if (r >= 0) {
		sd_bus_message_enter_container(reply, 'a', "s");
		first = 1;
		while (sd_bus_message_read(reply, "s", &name) > 0) {
			printf(json ? "%s\"%s\"" : "%s%s", first ? (json ? "" : " ") : (json ? "," : ", "),
			       name);
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

static uint64_t
get_u64(const char *prop)
{
	uint64_t v = 0;
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, prop, NULL, 't', &v);
	return v;
}

static void
print_reclaim(void)
{
	int zswap = 0;
	sd_bus_get_property_trivial(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ZswapEnabled", NULL,
				    'b', &zswap);
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
cmd_reclaim(const char *what, const char *size, bool zswap)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r;
	if (!strcmp(what, "setup"))
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "SetupReclaim", &e,
				       NULL, "tbsu", (uint64_t)strtoull(size ? size : "1024", NULL, 10) << 20,
				       zswap, "", 0);
	else if (!strcmp(what, "undo"))
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "UndoReclaim", &e,
				       NULL, "");
	else if (!strcmp(what, "show"))
		r = 0;
	else {
		fprintf(stderr, "warrenctl reclaim show|setup [MIB] [--no-zswap]|undo\n");
		return 2;
	}
	if (r < 0)
		return fail(r, &e, what);
	print_reclaim();
	return 0;
}

static int
cmd_list(void)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListSandboxes", &e,
				   &reply, "");
	if (r < 0)
		return fail(r, &e, "ListSandboxes");
	sd_bus_message_enter_container(reply, 'a', "(ssso)");
	const char *id, *tmpl, *state, *path;
	int first = 1;
	if (json)
		printf("[");
	else
		printf("%-14s %-10s %-10s %s\n", "ID", "TEMPLATE", "STATE", "URL");
	while (sd_bus_message_read(reply, "(ssso)", &id, &tmpl, &state, &path) > 0) {
		char *url = NULL;
		get_string(path, SANDBOX_IFACE, "URL", &url);
		if (json)
			printf("%s{\"id\":\"%s\",\"template\":\"%s\",\"state\":\"%s\",\"url\":\"%s\"}",
			       first ? "" : ",", id, tmpl, state, url ? url : "");
		else
			printf("%-14s %-10s %-10s %s\n", id, tmpl, state, url ? url : "");
		free(url);
		first = 0;
	}
	if (json)
		printf("]\n");
	sd_bus_message_unref(reply);
	return 0;
}

static int
cmd_templates(void)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTemplates", &e,
				   &reply, "");
	if (r < 0)
		return fail(r, &e, "ListTemplates");
	sd_bus_message_enter_container(reply, 'a', "(ssasqtb)");
	int first = 1;
	if (json)
		printf("[");
	while (sd_bus_message_enter_container(reply, 'r', "ssasqtb") > 0) {
		const char *name, *rootfs;
		char **argv = NULL;
		uint16_t port;
		uint64_t mem;
		int built;
		sd_bus_message_read(reply, "ss", &name, &rootfs);
		sd_bus_message_read_strv(reply, &argv);
		sd_bus_message_read(reply, "qtb", &port, &mem, &built);
		sd_bus_message_exit_container(reply);
		if (json) {
			printf("%s{\"name\":\"%s\",\"rootfs\":", first ? "" : ",", name);
			json_str(rootfs);
			printf(",\"port\":%u,\"memory_limit\":%llu,\"built\":%s}", port,
			       (unsigned long long)mem, built ? "true" : "false");
		} else {
			printf("%-10s port %-5u %5llu MiB  %s%s\n    ", name, port,
			       (unsigned long long)(mem >> 20), rootfs, built ? "" : "  (not built)");
			for (char **a = argv; a && *a; a++)
				printf(" %s", *a);
			printf("\n");
		}
		for (char **a = argv; a && *a; a++)
			free(*a);
		free(argv);
		first = 0;
	}
	if (json)
		printf("]\n");
	sd_bus_message_unref(reply);
	return 0;
}

static int
cmd_create(const char *tmpl, bool wait, const char *backend)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
				       "CreateSandbox");
	sd_bus_message_append(m, "s", tmpl);
	sd_bus_message_open_container(m, 'a', "{sv}");
	if (wait)
		sd_bus_message_append(m, "{sv}", "wait", "b", 1);
	if (backend)
		sd_bus_message_append(m, "{sv}", "backend", "s", backend);
	sd_bus_message_close_container(m);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = sd_bus_call(bus, m, 120 * 1000000ull, &e, &reply);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r < 0)
		return fail(r, &e, "CreateSandbox");
	const char *id, *path, *url;
	sd_bus_message_read(reply, "sos", &id, &path, &url);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (json)
		printf("{\"id\":\"%s\",\"path\":\"%s\",\"url\":\"%s\",\"ms\":%.1f}\n", id, path, url, ms);
	else
		printf("%s %s\n", id, url);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return 0;
}

static int
cmd_simple(const char *id, const char *method)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, method, &e, NULL, "");
	free(path);
	if (r < 0)
		return fail(r, &e, method);
	return 0;
}

static int
cmd_exec(const char *id, char **argv)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	char *path = sandbox_path(id);
	sd_bus_message_new_method_call(bus, &m, BUS_NAME, path, SANDBOX_IFACE,
				       exec_timeout_ms ? "ExecWithOptions" : "Exec");
	sd_bus_message_append_strv(m, argv);
	if (exec_timeout_ms)
		sd_bus_message_append(m, "a{sv}", 1, "timeout_ms", "u", exec_timeout_ms);
	/* the call outlives the command's own limit: its end is the supervisor's to name */
	uint64_t wait_us = ((exec_timeout_ms ? exec_timeout_ms : 60000) + 60000) * 1000ull;
	int r = sd_bus_call(bus, m, wait_us, &e, &reply);
	free(path);
	if (r < 0)
		return fail(r, &e, "Exec");
	int status;
	const void *out, *err;
	size_t out_len, err_len;
	sd_bus_message_read(reply, "i", &status);
	sd_bus_message_read_array(reply, 'y', &out, &out_len);
	sd_bus_message_read_array(reply, 'y', &err, &err_len);
	fwrite(out, 1, out_len, stdout);
	fwrite(err, 1, err_len, stderr);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return status;
}

/* logs [-f] ID: the sandbox's console log through the fd OpenLogs answers (a sealed copy, or
 * with -f a pipe that goes on with new output until the sandbox goes or ^C). */
static int
cmd_logs(int argc, char **argv, int first)
{
	bool follow = false;
	const char *id = NULL;
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
			follow = true;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "warrenctl: logs: unknown option %s\n", argv[i]);
			return 2;
		} else if (!id)
			id = argv[i];
		else {
			fprintf(stderr, "warrenctl: logs takes one sandbox id\n");
			return 2;
		}
	}
	if (!id) {
		fprintf(stderr, "Usage: warrenctl logs [-f] ID\n");
		return 2;
	}
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *path = sandbox_path(id);
	int r = sd_bus_call_method(bus, BUS_NAME, path, SANDBOX_IFACE, "OpenLogs", &e, &reply,
				   "a{sv}", 1, "follow", "b", follow);
	free(path);
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

/* Long calls: send asynchronously and show Manager.Progress signals until the answer comes. */
static int
on_progress(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	const char *op, *tag, *phase;
	uint32_t done, total;
	if (json || sd_bus_message_read(m, "sssuu", &op, &tag, &phase, &done, &total) < 0)
		return 0;
	int width = 30, fill = total ? (int)(width * done / total) : 0;
	fprintf(stderr, "\r%s %s [%.*s%*s] %u/%u %-20s", op, tag, fill,
		"##############################", width - fill, "", done, total, phase);
	return 0;
}

static int
on_reply(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	*(sd_bus_message **)ud = sd_bus_message_ref(m);
	return 0;
}

static int
call_with_progress(sd_bus_message *m, sd_bus_error *e, sd_bus_message **reply)
{
	sd_bus_match_signal(bus, NULL, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "Progress", on_progress,
			    NULL);
	sd_bus_message *got = NULL;
	int r = sd_bus_call_async(bus, NULL, m, on_reply, &got, 300 * 1000000ull);
	while (r >= 0 && !got) {
		r = sd_bus_process(bus, NULL);
		if (r == 0)
			r = sd_bus_wait(bus, UINT64_MAX);
	}
	if (!json)
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
print_ids(sd_bus_message *reply)
{
	char **ids = NULL;
	sd_bus_message_read_strv(reply, &ids);
	for (char **i = ids; i && *i; i++) {
		printf(json ? "%s\"%s\"" : "%s%s\n", json ? (i == ids ? "[" : ",") : "", *i);
		free(*i);
	}
	if (json)
		printf(ids && ids[0] ? "]\n" : "[]\n");
	free(ids);
	return 0;
}

static int
cmd_tags(void)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTags", &e, &reply,
				   "");
	if (r < 0)
		return fail(r, &e, "ListTags");
	sd_bus_message_enter_container(reply, 'a', "(sstbts)");
	const char *name, *tmpl, *parent;
	uint64_t size, created;
	int compressed, first = 1;
	if (!json)
		printf("%-16s %-10s %10s %-10s %s\n", "TAG", "TEMPLATE", "SIZE", "COMPRESSED", "PARENT");
	while (sd_bus_message_read(reply, "(sstbts)", &name, &tmpl, &size, &compressed, &created,
				   &parent) > 0) {
		if (json)
			printf("%s{\"tag\":\"%s\",\"template\":\"%s\",\"size\":%llu,\"compressed\":%s,"
			       "\"created_usec\":%llu,\"parent\":\"%s\"}",
			       first ? "[" : ",", name, tmpl, (unsigned long long)size,
			       compressed ? "true" : "false", (unsigned long long)created, parent);
		else
			printf("%-16s %-10s %7llu KiB %-10s %s\n", name, tmpl,
			       (unsigned long long)(size >> 10), compressed ? "yes" : "no", parent);
		first = 0;
	}
	if (json)
		printf(first ? "[]\n" : "]\n");
	sd_bus_message_unref(reply);
	return 0;
}

static void
usage(void)
{
	printf("Usage: warrenctl [--json] COMMAND\n"
	       "  status                  helpers, pool, backends\n"
	       "  list                    sandboxes\n"
	       "  templates | rmtemplate NAME   templates; remove one added with AddTemplate\n"
	       "  create TEMPLATE [--wait] [--backend=gvisor|microvm]\n"
	       "                          create a sandbox; prints its id and URL\n"
	       "  destroy ID\n"
	       "  exec ID [--timeout=S] -- CMD [ARG...]\n"
	       "                          run a command inside; exits with its status (a time\n"
	       "                          limit of S seconds, 60 by default)\n"
	       "  freeze ID | thaw ID\n"
	       "  snapshot ID TAG          checkpoint a running sandbox into a tag (it goes on)\n"
	       "  fork TAG COUNT           COUNT children from the tag's image\n"
	       "  branch ID TAG COUNT      snapshot ID into TAG and fork COUNT children from it\n"
	       "  tags | rmtag TAG\n"
	       "  logs [-f] ID             the sandbox's console (its program's stdout and\n"
	       "                          stderr); -f follows new output\n"
	       "  reclaim show | setup [MIB] [--no-zswap] | undo   swap file + zswap for reclaim\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"wait", no_argument, NULL, 'w'},
					     {"help", no_argument, NULL, 'h'},
					     {}};
	bool wait = false, zswap = true;
	int c;
	while ((c = getopt_long(argc, argv, "+hjw", opts, NULL)) >= 0) {
		if (c == 'j')
			json = true;
		else if (c == 'w')
			wait = true;
		else {
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		usage();
		return 2;
	}
	const char *cmd = argv[optind++];
	const char *backend = NULL;
	/* options may also follow the command */
	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "--")) 
			break;
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		if (!strncmp(argv[i], "--backend=", 10))
			backend = argv[i] + 10;
		if (!strcmp(argv[i], "--json"))
			json = true;
		if (!strcmp(argv[i], "--no-zswap"))
			zswap = false;
		if (!strncmp(argv[i], "--timeout=", 10)) {
			double s = atof(argv[i] + 10);
			if (!(s > 0) || s > 600) {
				fprintf(stderr, "warrenctl: --timeout=SECONDS, 0-600\n");
				return 2;
			}
			exec_timeout_ms = (unsigned)(s * 1000 + 0.5);
			if (!exec_timeout_ms)
				exec_timeout_ms = 1;
		}
	}
	int r = sd_bus_open_system(&bus);
	if (r < 0)
		return fail(r, NULL, "connecting to the system bus");
	const char *arg = optind < argc ? argv[optind] : NULL;
	if (!strcmp(cmd, "status"))
		return cmd_status();
	if (!strcmp(cmd, "list"))
		return cmd_list();
	if (!strcmp(cmd, "templates"))
		return cmd_templates();
	if (!strcmp(cmd, "tags"))
		return cmd_tags();
	if (!strcmp(cmd, "logs"))
		return cmd_logs(argc, argv, optind);
	if (!arg) {
		usage();
		return 2;
	}
	if (!strcmp(cmd, "reclaim"))
		return cmd_reclaim(arg, optind + 1 < argc && argv[optind + 1][0] != '-' ? argv[optind + 1] : NULL,
				   zswap);
	if (!strcmp(cmd, "create"))
		return cmd_create(arg, wait, backend);
	if (!strcmp(cmd, "destroy"))
		return cmd_simple(arg, "Destroy");
	if (!strcmp(cmd, "freeze"))
		return cmd_simple(arg, "Freeze");
	const char *arg2 = optind + 1 < argc ? argv[optind + 1] : NULL;
	const char *arg3 = optind + 2 < argc ? argv[optind + 2] : NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	if (!strcmp(cmd, "rmtemplate")) {
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveTemplate",
				       &e, NULL, "s", arg);
		return r < 0 ? fail(r, &e, "RemoveTemplate") : 0;
	}
	if (!strcmp(cmd, "rmtag")) {
		r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveTag", &e,
				       NULL, "s", arg);
		return r < 0 ? fail(r, &e, "RemoveTag") : 0;
	}
	sd_bus_message *m = NULL;
	if (!strcmp(cmd, "snapshot") && arg2) {
		char *path = sandbox_path(arg);
		sd_bus_message_new_method_call(bus, &m, BUS_NAME, path, SANDBOX_IFACE, "Snapshot");
		sd_bus_message_append(m, "s", arg2);
		r = call_with_progress(m, &e, &reply);
		free(path);
		if (r < 0)
			return fail(r, &e, "Snapshot");
		const char *tag;
		uint64_t size;
		sd_bus_message_read(reply, "st", &tag, &size);
		printf(json ? "{\"tag\":\"%s\",\"size\":%llu}\n" : "%s %llu\n", tag,
		       (unsigned long long)size);
		return 0;
	}
	if (!strcmp(cmd, "fork") && arg2) {
		sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ForkTag");
		sd_bus_message_append(m, "su", arg, (uint32_t)atoi(arg2));
		r = call_with_progress(m, &e, &reply);
		return r < 0 ? fail(r, &e, "ForkTag") : print_ids(reply);
	}
	if (!strcmp(cmd, "branch") && arg3) {
		sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					       "BranchSandbox");
		sd_bus_message_append(m, "ssu", arg, arg2, (uint32_t)atoi(arg3));
		r = call_with_progress(m, &e, &reply);
		return r < 0 ? fail(r, &e, "BranchSandbox") : print_ids(reply);
	}
	if (!strcmp(cmd, "thaw"))
		return cmd_simple(arg, "Thaw");
	if (!strcmp(cmd, "exec")) {
		int i = optind + 1;
		while (i < argc && !strncmp(argv[i], "--timeout=", 10))
			i++;
		if (i < argc && !strcmp(argv[i], "--"))
			i++;
		if (i >= argc) {
			usage();
			return 2;
		}
		return cmd_exec(arg, argv + i);
	}
	usage();
	return 2;
}

/* The firecracker driver against Firecracker's documented API (swagger/firecracker.yaml, v1.x):
 * a server on a Unix socket takes the driver's requests the way Firecracker's API thread does
 * (HTTP/1.1, one JSON body each), checks method, path and body against the documented schema
 * (known fields only -- Firecracker refuses unknown ones --, types, enums, required fields)
 * and answers 204, or 400 with a fault_message, as Firecracker does. The config file of a cold
 * boot is checked against FullVmConfiguration the same way. What this cannot show is a real
 * Firecracker running a guest: tests/integration/test-firecracker.sh does, where one exists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vmm.h"

/* ---- a small JSON reader: every value as (path, kind, text) ---- */

struct jv {
	char path[128];
	char kind; /* o object, a array, s string, n number, b bool, z null */
	char text[256];
};
struct jdoc {
	struct jv v[64];
	int n;
};

static const char *jparse(const char *p, const char *path, struct jdoc *d);

static const char *
jws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *
jstring(const char *p, char *out, size_t size)
{
	if (*p != '"')
		return NULL;
	size_t n = 0;
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				p += 4;
				continue;
			}
			if (!*p)
				return NULL;
		}
		if (n + 1 < size)
			out[n++] = *p;
	}
	out[n] = 0;
	return *p == '"' ? p + 1 : NULL;
}

static struct jv *
jadd(struct jdoc *d, const char *path, char kind)
{
	if (d->n == 64)
		return NULL;
	struct jv *v = &d->v[d->n++];
	snprintf(v->path, sizeof v->path, "%s", path);
	v->kind = kind;
	v->text[0] = 0;
	return v;
}

static const char *
jparse(const char *p, const char *path, struct jdoc *d)
{
	p = jws(p);
	char sub[128];
	struct jv *v;
	if (*p == '{') {
		if (!(v = jadd(d, path, 'o')))
			return NULL;
		p = jws(p + 1);
		if (*p == '}')
			return p + 1;
		for (;;) {
			char key[64];
			if (!(p = jstring(jws(p), key, sizeof key)))
				return NULL;
			p = jws(p);
			if (*p != ':')
				return NULL;
			snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
			for (int i = 0; i < d->n; i++)
				if (!strcmp(d->v[i].path, sub))
					return NULL; /* a field twice */
			if (!(p = jparse(p + 1, sub, d)))
				return NULL;
			p = jws(p);
			if (*p == '}')
				return p + 1;
			if (*p != ',')
				return NULL;
			p++;
		}
	}
	if (*p == '[') {
		if (!jadd(d, path, 'a'))
			return NULL;
		p = jws(p + 1);
		if (*p == ']')
			return p + 1;
		snprintf(sub, sizeof sub, "%s[]", path);
		for (;;) {
			if (!(p = jparse(p, sub, d)))
				return NULL;
			p = jws(p);
			if (*p == ']')
				return p + 1;
			if (*p != ',')
				return NULL;
			p++;
		}
	}
	if (*p == '"') {
		if (!(v = jadd(d, path, 's')))
			return NULL;
		return jstring(p, v->text, sizeof v->text);
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
		if (!(v = jadd(d, path, 'b')))
			return NULL;
		snprintf(v->text, sizeof v->text, "%s", *p == 't' ? "true" : "false");
		return p + (*p == 't' ? 4 : 5);
	}
	if (!strncmp(p, "null", 4))
		return jadd(d, path, 'z') ? p + 4 : NULL;
	if (*p == '-' || isdigit((unsigned char)*p)) {
		if (!(v = jadd(d, path, 'n')))
			return NULL;
		char *end;
		strtod(p, &end);
		snprintf(v->text, sizeof v->text, "%.*s", (int)(end - p), p);
		return end;
	}
	return NULL;
}

static bool
jdoc_parse(const char *text, struct jdoc *d)
{
	d->n = 0;
	const char *end = jparse(text, "", d);
	return end && !*jws(end) && d->n > 0 && d->v[0].kind == 'o';
}

static const struct jv *
jget(const struct jdoc *d, const char *path)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].path, path))
			return &d->v[i];
	return NULL;
}

/* ---- the documented schemas (the fields Warren may send; all of them as documented) ---- */

struct field {
	const char *path;
	char kind;
	bool required;	   /* when its parent is there */
	const char *enums; /* "|A|B|" or NULL */
};

static const struct field vm_schema[] = {{"state", 's', true, "|Paused|Resumed|"}, {}};
static const struct field create_schema[] = {{"mem_file_path", 's', true, NULL},
					     {"snapshot_path", 's', true, NULL},
					     {"snapshot_type", 's', false, "|Full|Diff|"},
					     {}};
static const struct field load_schema[] = {{"snapshot_path", 's', true, NULL},
					   {"mem_file_path", 's', false, NULL},
					   {"mem_backend", 'o', false, NULL},
					   {"mem_backend.backend_type", 's', true, "|File|Uffd|"},
					   {"mem_backend.backend_path", 's', true, NULL},
					   {"enable_diff_snapshots", 'b', false, NULL},
					   {"track_dirty_pages", 'b', false, NULL},
					   {"resume_vm", 'b', false, NULL},
					   {"vsock_override", 'o', false, NULL},
					   {"vsock_override.uds_path", 's', true, NULL},
					   {"clock_realtime", 'b', false, NULL},
					   {}};
static const struct field config_schema[] = {
	{"boot-source", 'o', false, NULL},
	{"boot-source.kernel_image_path", 's', true, NULL},
	{"boot-source.initrd_path", 's', false, NULL},
	{"boot-source.boot_args", 's', false, NULL},
	{"machine-config", 'o', false, NULL},
	{"machine-config.vcpu_count", 'n', true, NULL},
	{"machine-config.mem_size_mib", 'n', true, NULL},
	{"machine-config.smt", 'b', false, NULL},
	{"machine-config.track_dirty_pages", 'b', false, NULL},
	{"network-interfaces", 'a', false, NULL},
	{"network-interfaces[]", 'o', false, NULL},
	{"network-interfaces[].iface_id", 's', true, NULL},
	{"network-interfaces[].host_dev_name", 's', true, NULL},
	{"network-interfaces[].guest_mac", 's', false, NULL},
	{"vsock", 'o', false, NULL},
	{"vsock.guest_cid", 'n', true, NULL},
	{"vsock.uds_path", 's', true, NULL},
	{"drives", 'a', false, NULL},
	{"drives[]", 'o', false, NULL},
	{"drives[].drive_id", 's', true, NULL},
	{"drives[].is_root_device", 'b', true, NULL},
	{"drives[].is_read_only", 'b', false, NULL},
	{"drives[].path_on_host", 's', false, NULL},
	{}};

/* NULL when doc follows schema, else what is wrong. */
static const char *
schema_check(const struct jdoc *d, const struct field *schema, char *why, size_t size)
{
	for (int i = 1; i < d->n; i++) {
		const struct field *f = schema;
		while (f->path && strcmp(f->path, d->v[i].path))
			f++;
		if (!f->path)
			return snprintf(why, size, "unknown field %s", d->v[i].path), why;
		if (f->kind != d->v[i].kind)
			return snprintf(why, size, "%s: wrong type", f->path), why;
		char e[300];
		snprintf(e, sizeof e, "|%s|", d->v[i].text);
		if (f->enums && !strstr(f->enums, e))
			return snprintf(why, size, "%s: %s not in %s", f->path, d->v[i].text,
					f->enums),
			       why;
	}
	for (const struct field *f = schema; f->path; f++) {
		if (!f->required || jget(d, f->path))
			continue;
		char parent[128];
		snprintf(parent, sizeof parent, "%s", f->path);
		char *dot = strrchr(parent, '.');
		if (dot)
			*dot = 0;
		if (!dot || jget(d, parent))
			return snprintf(why, size, "missing %s", f->path), why;
	}
	return NULL;
}

/* ---- the API server ---- */

struct server {
	char dir[64];
	int lfd;
	pthread_t thread;
	/* the last request */
	char method[16], path[64], body[2048];
	int requests;
	/* what to answer */
	int status;
	const char *reply_body;
	char why[200];		/* a schema violation: answered 400 too */
	const char *state_link; /* a hostile VMM: its state file is a symlink to this */
};

static const struct field *
schema_for(const char *method, const char *path)
{
	if (!strcmp(method, "PATCH") && !strcmp(path, "/vm"))
		return vm_schema;
	if (!strcmp(method, "PUT") && !strcmp(path, "/snapshot/create"))
		return create_schema;
	if (!strcmp(method, "PUT") && !strcmp(path, "/snapshot/load"))
		return load_schema;
	return NULL;
}

static void
serve_one(struct server *s, int c)
{
	char buf[4096];
	size_t have = 0;
	long want = -1;
	for (;;) {
		ssize_t k = read(c, buf + have, sizeof buf - 1 - have);
		if (k <= 0)
			return;
		have += (size_t)k;
		buf[have] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (end && want < 0) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			if (!cl || cl > end) {
				snprintf(s->why, sizeof s->why, "no Content-Length");
				want = end + 4 - buf;
			} else {
				want = end + 4 - buf + atol(cl + 17);
			}
		}
		if (want >= 0 && (long)have >= want)
			break;
	}
	char *end = strstr(buf, "\r\n\r\n");
	sscanf(buf, "%15s %63s", s->method, s->path);
	snprintf(s->body, sizeof s->body, "%s", end + 4);
	s->requests++;
	int status = s->status;
	const char *body = s->reply_body;
	char fault[300];
	const struct field *schema = schema_for(s->method, s->path);
	struct jdoc d;
	if (!strstr(buf, "HTTP/1.1\r\n") || !strcasestr(buf, "\r\nContent-Type: application/json"))
		snprintf(s->why, sizeof s->why, "not an HTTP/1.1 JSON request");
	else if (!schema)
		snprintf(s->why, sizeof s->why, "no such endpoint %s %s", s->method, s->path);
	else if (!jdoc_parse(s->body, &d))
		snprintf(s->why, sizeof s->why, "body is not a JSON object: %.100s", s->body);
	else
		schema_check(&d, schema, s->why, sizeof s->why);
	if (!strcmp(s->path, "/snapshot/load") && !s->why[0] &&
	    !!jget(&d, "mem_backend") == !!jget(&d, "mem_file_path"))
		snprintf(s->why, sizeof s->why, "exactly one of mem_backend, mem_file_path");
	if (s->why[0]) {
		status = 400;
		snprintf(fault, sizeof fault, "{\"fault_message\": \"%s\"}", s->why);
		body = fault;
	} else if (!strcmp(s->path, "/snapshot/create") && status == 204) {
		/* what Firecracker does: writes the state and the memory files */
		const struct jv *sp = jget(&d, "snapshot_path"), *mp = jget(&d, "mem_file_path");
		FILE *f;
		if (s->state_link) {
			if (symlink(s->state_link, sp->text) < 0)
				return;
		} else {
			f = fopen(sp->text, "w");
			fputs("firecracker-state", f);
			fclose(f);
		}
		f = fopen(mp->text, "w");
		fputs("memory", f);
		fclose(f);
	}
	char reply[800];
	int n = body ? snprintf(reply, sizeof reply,
				"HTTP/1.1 %d Bad Request\r\nServer: Firecracker API\r\n"
				"Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
				status, strlen(body), body)
		     : snprintf(reply, sizeof reply,
				"HTTP/1.1 %d No Content\r\nServer: Firecracker API\r\n\r\n",
				status);
	if (write(c, reply, (size_t)n) < 0)
		return;
}

static void *
server_main(void *arg)
{
	struct server *s = arg;
	for (;;) {
		int c = accept(s->lfd, NULL, NULL);
		if (c < 0)
			return NULL;
		serve_one(s, c);
		close(c);
	}
}

static int
setup(void **state)
{
	struct server *s = calloc(1, sizeof *s);
	snprintf(s->dir, sizeof s->dir, "/tmp/warren-fc-test.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/vmm.sock", s->dir);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	s->status = 204;
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
	*state = s;
	return 0;
}

static int
teardown(void **state)
{
	struct server *s = *state;
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", s->dir);
	assert_int_equal(system(cmd), 0);
	free(s);
	return 0;
}

static void
test_pause_resume(void **state)
{
	struct server *s = *state;
	assert_int_equal(vmm_firecracker.pause(s->dir), 0);
	assert_string_equal(s->why, "");
	assert_string_equal(s->method, "PATCH");
	assert_string_equal(s->path, "/vm");
	struct jdoc d;
	assert_true(jdoc_parse(s->body, &d));
	assert_string_equal(jget(&d, "state")->text, "Paused");
	assert_int_equal(vmm_firecracker.resume(s->dir), 0);
	assert_true(jdoc_parse(s->body, &d));
	assert_string_equal(jget(&d, "state")->text, "Resumed");
	assert_int_equal(s->requests, 2);
}

static void
test_fault_is_an_error(void **state)
{
	struct server *s = *state;
	s->status = 400;
	s->reply_body = "{\"fault_message\": \"The requested operation is not supported\"}";
	assert_int_equal(vmm_firecracker.pause(s->dir), -EIO);
	assert_int_equal(s->requests, 1);
}

static void
test_save(void **state)
{
	struct server *s = *state;
	char mem[128], state_path[128];
	snprintf(mem, sizeof mem, "%s/mem", s->dir);
	snprintf(state_path, sizeof state_path, "%s/image-state", s->dir);
	for (int diff = 0; diff < 2; diff++) {
		int fd = open(state_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_int_equal(vmm_firecracker.save(s->dir, fd, mem, diff), 0);
		assert_string_equal(s->why, "");
		assert_string_equal(s->path, "/snapshot/create");
		struct jdoc d;
		assert_true(jdoc_parse(s->body, &d));
		assert_string_equal(jget(&d, "snapshot_type")->text, diff ? "Diff" : "Full");
		assert_string_equal(jget(&d, "mem_file_path")->text, mem);
		/* the state Firecracker wrote is in the image's fd, its file gone from vmm_dir */
		char got[64] = "";
		assert_int_equal(pread(fd, got, sizeof got - 1, 0), 17);
		assert_string_equal(got, "firecracker-state");
		assert_int_equal(access(jget(&d, "snapshot_path")->text, F_OK), -1);
		assert_int_equal(access(mem, F_OK), 0); /* the memory is the core's to copy */
		close(fd);
	}
}

/* A VMM (running as the VM user, in its own directory) that leaves a symlink where its state
 * should be: the driver does not follow it, so root copies nothing it points at. */
static void
test_save_refuses_a_symlink(void **state)
{
	struct server *s = *state;
	char mem[128], state_path[128], secret[128];
	snprintf(mem, sizeof mem, "%s/mem", s->dir);
	snprintf(state_path, sizeof state_path, "%s/image-state", s->dir);
	snprintf(secret, sizeof secret, "%s/secret", s->dir);
	FILE *f = fopen(secret, "w");
	fputs("root's secret", f);
	fclose(f);
	s->state_link = secret;
	int fd = open(state_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(vmm_firecracker.save(s->dir, fd, mem, false) < 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	close(fd);
}

static void
test_restore(void **state)
{
	struct server *s = *state;
	struct vmm_restore r = {.vmm_dir = s->dir, .state_fd = 7, .ram_fd = 8};
	assert_int_equal(vmm_firecracker.restore(&r), 0);
	assert_string_equal(s->why, "");
	assert_string_equal(s->method, "PUT");
	assert_string_equal(s->path, "/snapshot/load");
	struct jdoc d;
	assert_true(jdoc_parse(s->body, &d));
	assert_string_equal(jget(&d, "snapshot_path")->text, "/proc/self/fd/7");
	assert_string_equal(jget(&d, "mem_backend.backend_type")->text, "File");
	assert_string_equal(jget(&d, "mem_backend.backend_path")->text, "/proc/self/fd/8");
	assert_string_equal(jget(&d, "resume_vm")->text, "true");
	assert_string_equal(jget(&d, "track_dirty_pages")->text, "true");
	char uds[128];
	snprintf(uds, sizeof uds, "%s/agent.sock", s->dir);
	assert_string_equal(jget(&d, "vsock_override.uds_path")->text, uds);
}

static void
free_argv(char **a)
{
	for (char **p = a; *p; p++)
		free(*p);
	free(a);
}

static void
test_config_file(void **state)
{
	struct server *s = *state;
	struct vmm_launch l = {.binary = "/usr/bin/firecracker",
			       .kernel = "/var/lib/warren/vm/vmlinux",
			       .initrd = "/var/lib/warren/templates/web/vm-initramfs.cpio",
			       .root_disk = "/var/lib/warren/templates/app/vm-rootfs.ext4",
			       .cmdline = "quiet warren.argv=2f62696e00 \"quoted\"",
			       .ram_bytes = 256ull << 20,
			       .port = 8080,
			       .vmm_dir = s->dir,
			       .tap = true,
			       .incoming_fd = -1};
	char **argv;
	assert_int_equal(vmm_firecracker.argv(&l, &argv), 0);
	char sock[128], config[128];
	snprintf(sock, sizeof sock, "%s/vmm.sock", s->dir);
	snprintf(config, sizeof config, "%s/config.json", s->dir);
	assert_string_equal(argv[0], "/usr/bin/firecracker");
	assert_string_equal(argv[1], "--api-sock");
	assert_string_equal(argv[2], sock);
	assert_string_equal(argv[3], "--config-file");
	assert_string_equal(argv[4], config);
	assert_null(argv[5]);
	free_argv(argv);
	/* its stdout is the guest's serial port: its own log goes to a file of its own */
	char own[128];
	snprintf(own, sizeof own, "%s/vmm-own.log", s->dir);
	l.own_log = own;
	unlink(config);
	assert_int_equal(vmm_firecracker.argv(&l, &argv), 0);
	assert_string_equal(argv[5], "--log-path");
	assert_string_equal(argv[6], own);
	assert_null(argv[7]);
	free_argv(argv);
	l.own_log = NULL;

	char text[4096] = "";
	FILE *f = fopen(config, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	struct jdoc d;
	assert_true(jdoc_parse(text, &d));
	char why[200] = "";
	schema_check(&d, config_schema, why, sizeof why);
	assert_string_equal(why, "");
	assert_string_equal(jget(&d, "boot-source.boot_args")->text, l.cmdline);
	assert_string_equal(jget(&d, "machine-config.mem_size_mib")->text, "256");
	assert_string_equal(jget(&d, "machine-config.vcpu_count")->text, "1");
	assert_string_equal(jget(&d, "network-interfaces[].host_dev_name")->text, VMM_TAP_NAME);
	assert_true(atoi(jget(&d, "vsock.guest_cid")->text) >= 3);
	assert_string_equal(jget(&d, "drives[].path_on_host")->text, l.root_disk);
	assert_string_equal(jget(&d, "drives[].is_read_only")->text, "true");

	/* a restore is a bare process: no config, /snapshot/load is accepted only then */
	unlink(config);
	l.incoming_fd = 5;
	assert_int_equal(vmm_firecracker.argv(&l, &argv), 0);
	assert_null(argv[3]);
	assert_int_equal(access(config, F_OK), -1);
	free_argv(argv);
}

static void
test_schema_checker_refuses(void **state)
{
	/* the checker itself must be able to fail */
	struct jdoc d;
	char why[200];
	assert_true(jdoc_parse("{\"state\": \"Stopped\"}", &d));
	assert_non_null(schema_check(&d, vm_schema, why, sizeof why));
	assert_true(jdoc_parse("{\"state\": \"Paused\", \"force\": true}", &d));
	assert_non_null(schema_check(&d, vm_schema, why, sizeof why));
	assert_true(jdoc_parse("{\"snapshot_path\": \"/a\"}", &d));
	assert_non_null(schema_check(&d, create_schema, why, sizeof why));
	assert_true(jdoc_parse(
		"{\"snapshot_path\": \"/a\", \"mem_backend\": {\"backend_path\": \"/b\"}}", &d));
	assert_non_null(schema_check(&d, load_schema, why, sizeof why));
	assert_false(jdoc_parse("{\"state\": \"Paused\",}", &d));
	assert_false(jdoc_parse("{\"a\": 1, \"a\": 2}", &d));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pause_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_refuses_a_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_file, setup, teardown),
		cmocka_unit_test(test_schema_checker_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

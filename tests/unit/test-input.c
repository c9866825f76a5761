/* Unit tests of what enters Warren from outside: the shared string checker (every D-Bus string),
 * reserved tags, the template record (write -> read is the same; injected lines are refused)
 * and the image header parser. */
/* cmocka needs these first */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image-header.h"
#include "names.h"
#include "template-record.h"

static void
test_string_check(void **state)
{
	size_t at = 99;
	assert_int_equal(string_check("python3 /app/app.py --port 8080", 4096, NULL), 0);
	assert_int_equal(string_check("", 4096, NULL), 0);
	assert_int_equal(string_check("caf\xc3\xa9 \xe2\x82\xac", 4096, NULL),
			 0); /* UTF-8 is fine */
	assert_int_equal(string_check("a\nstandby=1000", 4096, &at), -EINVAL);
	assert_int_equal(at, 1);
	assert_int_equal(string_check("ab\r", 4096, &at), -EINVAL);
	assert_int_equal(at, 2);
	assert_int_equal(string_check("\t", 4096, NULL), -EINVAL);
	assert_int_equal(string_check("x\x01", 4096, NULL), -EINVAL);
	assert_int_equal(string_check("x\x7f", 4096, NULL), -EINVAL);
	assert_int_equal(string_check("x\x1b[2J", 4096, NULL), -EINVAL);
	assert_int_equal(string_check("x\xc2\x85y", 4096, NULL), -EINVAL); /* NEL, C1 */
	assert_int_equal(string_check(NULL, 4096, NULL), -EINVAL);
	char *big = malloc(100 * 1024 + 1);
	memset(big, 'a', 100 * 1024);
	big[100 * 1024] = 0;
	assert_int_equal(string_check(big, 4096, NULL), -E2BIG);
	big[4096] = 0;
	assert_int_equal(string_check(big, 4096, NULL), 0);
	big[4097] = 0;
	big[4096] = 'a';
	assert_int_equal(string_check(big, 4096, NULL), -E2BIG);
	free(big);
	assert_true(string_valid("ok", 2));
	assert_false(string_valid("ok!", 2));
}

static void
test_tags(void **state)
{
	assert_true(tag_name_valid("v1"));
	assert_true(tag_reserved("warm-web"));
	assert_false(tag_reserved("warmweb"));
	assert_false(tag_reserved("web-warm-"));
	/* the crash of 0.2.0: a warm tag of a 28-character name is not a tag */
	assert_false(tag_name_valid("warm-abcdefghijklmnopqrstuvwxyz01"));
	assert_false(tag_name_valid("../etc"));
	assert_false(tag_name_valid(".tmp.x"));
}

static char *argv_ok[] = {"/usr/bin/python3", "/app/app.py", "--fmt", "100%", "a=b", NULL};

static struct template_record
good(void)
{
	return (struct template_record){.rootfs = "/var/lib/warren/templates/x/rootfs",
					.argv = argv_ok,
					.argc = 5,
					.port = 8080,
					.memory_limit = 64ull << 20,
					.allow_outbound = true,
					.idle_ms = 1234,
					.warm = true,
					.standby = 2,
					.pids_max = 128,
					.cpu_millis = 250};
}

static void
test_record_round_trip(void **state)
{
	struct template_record w = good(), r;
	char *buf;
	size_t len;
	assert_int_equal(template_record_format(&w, &buf, &len), 0);
	assert_int_equal(strncmp(buf, "format=2\n", 9), 0);
	char why[200] = "";
	assert_int_equal(template_record_parse(buf, len, &r, why, sizeof why), 0);
	assert_string_equal(r.rootfs, w.rootfs);
	assert_int_equal(r.argc, w.argc);
	for (size_t i = 0; i < w.argc; i++)
		assert_string_equal(r.argv[i], w.argv[i]);
	assert_null(r.argv[r.argc]);
	assert_int_equal(r.port, w.port);
	assert_int_equal(r.memory_limit, w.memory_limit);
	assert_int_equal(r.allow_outbound, w.allow_outbound);
	assert_int_equal(r.idle_ms, w.idle_ms);
	assert_int_equal(r.warm, w.warm);
	assert_int_equal(r.standby, w.standby);
	assert_int_equal(r.pids_max, w.pids_max);
	assert_int_equal(r.cpu_millis, w.cpu_millis);
	/* and writing what was read gives the same bytes */
	char *buf2;
	size_t len2;
	assert_int_equal(template_record_format(&r, &buf2, &len2), 0);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	template_record_clear(&r);
	free(buf);
	free(buf2);
}

static void
test_record_write_refuses(void **state)
{
	char *buf = NULL;
	size_t len;
	/* the 0.2.0 attack: an argv element that ends its line */
	char *inj[] = {"/bin/sh", "x\nstandby=1000\nwarm=1", NULL};
	struct template_record w = good();
	w.argv = inj;
	w.argc = 2;
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	assert_null(buf);
	w = good();
	w.rootfs = "/x\rwarm=1";
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.rootfs = "relative";
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.standby = 1000;
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.pids_max = 63; /* a template's pids: 0 or 64-65536 */
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.cpu_millis = 49; /* cpu_millis: 0 or 50-1024000 */
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.cpu_millis = 1024001;
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.port = 0;
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
	w = good();
	w.argc = 0;
	assert_int_equal(template_record_format(&w, &buf, &len), -EINVAL);
}

static int
parse(const char *s)
{
	struct template_record r;
	char why[200];
	int k = template_record_parse(s, strlen(s), &r, why, sizeof why);
	if (k == 0)
		template_record_clear(&r);
	return k;
}

#define BASE "rootfs=/t/rootfs\nport=8080\nmemory=67108864\nallow_outbound=0\nidle_ms=0\n"

static void
test_record_load_refuses(void **state)
{
	/* a 0.2.0 record still loads; the same record with the injected lines does not */
	assert_int_equal(parse(BASE "warm=0\nstandby=0\narg=/bin/sh\narg=-c\n"), 0);
	assert_int_equal(parse(BASE "warm=0\nstandby=0\narg=x\nstandby=1000\nwarm=1\n"), -EBADMSG);
	/* format 2 */
	assert_int_equal(parse("format=2\n" BASE "warm=0\nstandby=0\narg=100%25\n"), 0);
	assert_int_equal(parse("format=2\n" BASE "warm=0\nstandby=0\narg=x%0Awarm=1\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x%\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x%4\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x%zz\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x%00\n"), -EBADMSG);
	assert_int_equal(parse("format=3\n" BASE "arg=x\n"), -EBADMSG);
	assert_int_equal(parse(BASE "format=2\narg=x\n"), -EBADMSG); /* not first */
	assert_int_equal(parse(BASE "standby=1000\nwarm=1\narg=x\n"), -EBADMSG);
	assert_int_equal(parse(BASE "colour=blue\narg=x\n"), -EBADMSG);	  /* unknown key */
	assert_int_equal(parse(BASE "arg=x\nrootfs=/other\n"), -EBADMSG); /* twice */
	assert_int_equal(parse(BASE "arg=x"), -EBADMSG);		  /* no line end */
	assert_int_equal(parse(BASE "arg=x\r\n"), -EBADMSG);
	assert_int_equal(parse(BASE "arg=x\nwarm=1x\n"), -EBADMSG);
	assert_int_equal(parse(BASE "arg=x\nwarm=2\n"), -EBADMSG);
	assert_int_equal(parse(BASE "arg=x\nidle_ms=-1\n"), -EBADMSG);
	/* a template's own bounds: in range, once */
	assert_int_equal(parse("format=2\n" BASE "arg=x\npids=64\ncpu_millis=50\n"), 0);
	assert_int_equal(parse("format=2\n" BASE "arg=x\npids=0\ncpu_millis=0\n"), 0);
	assert_int_equal(parse("format=2\n" BASE "arg=x\npids=10\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\npids=65537\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\ncpu_millis=1024001\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\npids=100\npids=100\n"), -EBADMSG);
	assert_int_equal(parse(BASE "arg=x\nidle_ms=99999999999999999999999\n"), -EBADMSG);
	assert_int_equal(parse(BASE), -EBADMSG);				/* no command */
	assert_int_equal(parse("port=80\nmemory=67108864\narg=x\n"), -EBADMSG); /* no rootfs */
	assert_int_equal(parse("rootfs=/t\nport=0\nmemory=67108864\narg=x\n"), -EBADMSG);
	assert_int_equal(parse("rootfs=/t\nport=80\nmemory=1\narg=x\n"), -EBADMSG);
	assert_int_equal(parse("rootfs=/t\nport=80\nmemory=67108864\narg=\n"), -EBADMSG);
	assert_int_equal(parse("rootfs=/t\nport=80\nmemory=67108864\narg=x\njunk\n"), -EBADMSG);
	char nul[] = "rootfs=/t\nport=80\nmemory=67108864\narg=x\0y\n";
	struct template_record r;
	assert_int_equal(template_record_parse(nul, sizeof nul - 1, &r, NULL, 0), -EBADMSG);
	/* env, cwd, user: escaped like argv, checked on load */
	assert_int_equal(parse("format=2\n" BASE
			       "arg=x\nenv=A=1\nenv=B=100%25\ncwd=/www\nuid=1000\ngid=1000\n"),
			 0);
	assert_int_equal(parse("format=2\n" BASE "arg=x\nenv=NOEQUALS\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\nenv=B=x%0Awarm=1\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\nenv==x\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\ncwd=www\n"), -EBADMSG);  /* relative */
	assert_int_equal(parse("format=2\n" BASE "arg=x\nuid=1000\n"), -EBADMSG); /* no gid */
	assert_int_equal(parse("format=2\n" BASE "arg=x\nuid=70000\ngid=1\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\nimported=2\n"), -EBADMSG);
	/* the egress policy: canonical only (what the supervisor writes), once */
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=10.0.0.0/8:443,192.0.2.7\n"), 0);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=off\n"), 0);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=10.0.0.1/8\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=1.2.3.4/33\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=1.2.3.4%0A\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=\n"), -EBADMSG);
	assert_int_equal(parse("format=2\n" BASE "arg=x\negress=on\negress=off\n"), -EBADMSG);
	{
		char *e = malloc(16384);
		strcpy(e, "format=2\n" BASE "arg=x\n");
		for (int i = 0; i < 129; i++)
			strcat(e, "env=K=v\n");
		assert_int_equal(parse(e), -EBADMSG); /* 129 entries */
		free(e);
	}
	{
		/* a round trip keeps them */
		char *env[] = {"A=1", "B=two words", NULL};
		struct template_record w = {.rootfs = "/t/rootfs",
					    .argv = (char *[]){"x", NULL},
					    .argc = 1,
					    .port = 80,
					    .memory_limit = 64 << 20,
					    .env = env,
					    .envc = 2,
					    .cwd = "/srv",
					    .user_set = true,
					    .uid = 7,
					    .gid = 8,
					    .imported = true,
					    .egress = "192.0.2.0/24:443"};
		char *buf = NULL;
		size_t len = 0;
		assert_int_equal(template_record_format(&w, &buf, &len), 0);
		struct template_record rr;
		assert_int_equal(template_record_parse(buf, len, &rr, NULL, 0), 0);
		assert_int_equal(rr.envc, 2);
		assert_string_equal(rr.env[1], "B=two words");
		assert_string_equal(rr.cwd, "/srv");
		assert_true(rr.user_set && rr.uid == 7 && rr.gid == 8 && rr.imported);
		assert_string_equal(rr.egress, "192.0.2.0/24:443");
		template_record_clear(&rr);
		free(buf);
	}
	/* 65 arguments */
	char *many = malloc(8192);
	strcpy(many, BASE);
	for (int i = 0; i < 65; i++)
		strcat(many, "arg=x\n");
	assert_int_equal(parse(many), -EBADMSG);
	free(many);
}

static int
header(const char *s, struct image_header *h)
{
	return image_header_parse(s, strlen(s), h, NULL, 0);
}

static void
test_image_header(void **state)
{
	static struct image_header h;
	assert_int_equal(
		header("format=1\ncreated=5\nparent=0123456789ab\ntemplate=web\n"
		       "backend=microvm\ncompression=zstd\n"
		       "file=checkpoint.img 10 00000000000000ff\nfile=ram.zst 0 0000000000000000\n",
		       &h),
		0);
	assert_string_equal(h.parent, "0123456789ab");
	assert_string_equal(h.template_name, "web");
	assert_string_equal(h.backend, "microvm");
	assert_true(h.compressed);
	assert_int_equal(h.n_files, 2);
	assert_int_equal(h.files[0].size, 10);
	assert_int_equal(h.files[0].hash, 0xff);
	assert_int_equal(h.format, IMAGE_HEADER_FORMAT_FNV); /* an earlier version's image */
	assert_int_equal(header("format=1\nfile=a 1 0000000000000001\n", &h), 0);
	assert_string_equal(h.backend, "gvisor");
	assert_int_equal(header("format=2\nfile=a 1 0000000000000001\n", &h), 0);
	assert_int_equal(h.format, IMAGE_HEADER_FORMAT); /* XXH3 */
	const char *bad[] = {
		"file=a 1 0000000000000001\n",		    /* no format */
		"format=3\nfile=a 1 0000000000000001\n",    /* unknown format */
		"format=1\n",				    /* no files */
		"format=1\nfile=../x 1 0000000000000001\n", /* escapes */
		"format=1\nfile=a/b 1 0000000000000001\n",
		"format=1\nfile=.hidden 1 0000000000000001\n",
		"format=1\nfile=warren-image 1 0000000000000001\n",
		"format=1\nfile=a 1 0000000000000001\nfile=a 1 0000000000000001\n", /* twice */
		"format=1\nfile=a -1 0000000000000001\n",
		"format=1\nfile=a 1 01\n",
		"format=1\nfile=a 1 000000000000000g\n",
		"format=1\nfile=a 1\n",
		"format=1\nformat=1\nfile=a 1 0000000000000001\n",
		"format=1\nparent=../../etc/pa\nfile=a 1 0000000000000001\n",
		"format=1\ntemplate=Web\nfile=a 1 0000000000000001\n",
		"format=1\nbackend=qemu\nfile=a 1 0000000000000001\n",
		"format=1\ncompression=lz4\nfile=a 1 0000000000000001\n",
		"format=1\nfile=a 1 0000000000000001", /* no line end */
		"format=1\nfile=a 1 0000000000000001\r\n",
		"format=1\nmystery=1\nfile=a 1 0000000000000001\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(header(bad[i], &h), -EBADMSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_string_check),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_write_refuses),
		cmocka_unit_test(test_record_load_refuses),
		cmocka_unit_test(test_image_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

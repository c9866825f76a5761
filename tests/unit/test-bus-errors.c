/* The supervisor's D-Bus error table (supervisor/bus-errors.c): every name maps to its errno
 * through sd-bus once registered, and every ERR("...") the supervisor's sources send is in the
 * table (a name missing from it would reach clients as a generic error with no errno). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bus-errors.h"

static const char *source_dir;

static int
in_table(const char *name)
{
	for (const sd_bus_error_map *m = warren_bus_errors; m->name; m++)
		if (!strcmp(m->name, name))
			return 1;
	return 0;
}

/* The ERR("X") names in text that are not in the table: their count. */
static int
missing_names(const char *text, const char *file)
{
	int missing = 0;
	for (const char *p = text; (p = strstr(p, "ERR(\"")); p += 5) {
		const char *b = p + 5, *e = strchr(b, '"');
		if (!e)
			break;
		char name[128];
		snprintf(name, sizeof name, "org.warren.Warren1.Error.%.*s", (int)(e - b), b);
		if (!in_table(name)) {
			fprintf(stderr, "%s: %s is not in warren_bus_errors\n", file, name);
			missing++;
		}
	}
	return missing;
}

static void
test_errno_round_trip(void **state)
{
	(void)state;
	assert_int_equal(bus_errors_init(), 0);
	int n = 0;
	for (const sd_bus_error_map *m = warren_bus_errors; m->name; m++, n++) {
		sd_bus_error e = SD_BUS_ERROR_NULL;
		assert_int_equal(sd_bus_error_set(&e, m->name, "x"), -m->code);
		assert_int_equal(sd_bus_error_get_errno(&e), m->code);
		sd_bus_error_free(&e);
	}
	assert_true(n >= 20);
}

static void
test_every_sent_name_is_mapped(void **state)
{
	(void)state;
	/* positive control: a name the table does not have is flagged */
	assert_int_equal(
		missing_names("sd_bus_error_setf(err, ERR(\"NoSuchThing\"), \"x\")", "control"), 1);
	assert_int_equal(missing_names("ERR(\"BadState\")", "control"), 0);

	DIR *d = opendir(source_dir);
	assert_non_null(d);
	int files = 0, missing = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 3 || strcmp(de->d_name + len - 2, ".c"))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", source_dir, de->d_name);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		char *text = NULL;
		size_t size = 0;
		FILE *mem = open_memstream(&text, &size);
		char buf[8192];
		size_t got;
		while ((got = fread(buf, 1, sizeof buf, f)) > 0)
			fwrite(buf, 1, got, mem);
		fclose(f);
		fclose(mem);
		missing += missing_names(text, de->d_name);
		free(text);
		files++;
	}
	closedir(d);
	assert_true(files > 10);
	assert_int_equal(missing, 0);
}

int
main(int argc, char **argv)
{
	source_dir = argc > 1 ? argv[1] : "supervisor";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_round_trip),
		cmocka_unit_test(test_every_sent_name_is_mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

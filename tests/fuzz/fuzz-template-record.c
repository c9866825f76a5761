/* libFuzzer harness: the supervisor's template record parser and writer
 * (supervisor/template-record.c). What must hold beyond no crash: an accepted record passes the
 * same checks AddTemplate applies, and writing it and parsing that again gives the same record
 * (no value can write a key of its own). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "template-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct template_record r, again;
	char why[200];
	if (template_record_parse((const char *)data, size, &r, why, sizeof why) < 0)
		return 0;
	if (template_record_check(&r, NULL, 0) < 0)
		__builtin_trap();
	for (size_t i = 0; i < r.argc; i++)
		if (!string_valid(r.argv[i], TEMPLATE_ARG_MAX))
			__builtin_trap();
	char *buf = NULL;
	size_t len = 0;
	if (template_record_format(&r, &buf, &len) < 0 ||
	    template_record_parse(buf, len, &again, why, sizeof why) < 0)
		__builtin_trap();
	if (strcmp(r.rootfs, again.rootfs) || r.argc != again.argc || r.port != again.port ||
	    r.memory_limit != again.memory_limit || r.allow_outbound != again.allow_outbound ||
	    r.idle_ms != again.idle_ms || r.warm != again.warm || r.standby != again.standby ||
	    r.pids_max != again.pids_max || r.cpu_millis != again.cpu_millis)
		__builtin_trap();
	for (size_t i = 0; i < r.argc; i++)
		if (strcmp(r.argv[i], again.argv[i]))
			__builtin_trap();
	free(buf);
	template_record_clear(&r);
	template_record_clear(&again);
	return 0;
}

/* libFuzzer harness: warren-clusterd's checks of HTTP input (cluster/cluster-input.c): a create
 * body or a fork body from a client or another host. Beyond "no crash": what a body yields passes
 * the same checks again (a template and a request id that may be an etcd key and a D-Bus argument).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clusterd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char t[72], r[CLUSTER_RID_MAX + 1];
	if (size > 8192)
		return 0;
	if (cluster_input_create((const char *)data, size, t, sizeof t, r, sizeof r) == 0) {
		if (!cluster_input_template_ok(t) || (r[0] && !cluster_input_rid_ok(r)))
			abort();
	}
	char tag[CLUSTER_TAG_MAX + 1], rid[CLUSTER_RID_MAX + 1], host[CLUSTER_NAME_MAX + 1];
	unsigned count;
	if (cluster_input_fork((const char *)data, size, tag, &count, rid, host) == 0) {
		if (!cluster_input_tag_ok(tag) || count < 1 || count > CLUSTER_FORK_MAX ||
		    (rid[0] && !cluster_input_rid_ok(rid)) ||
		    (host[0] && !cluster_input_name_ok(host)))
			abort();
	}
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	(void)cluster_input_addr_ok(s);
	(void)cluster_input_name_ok(s);
	(void)cluster_input_id_ok(s);
	free(s);
	return 0;
}

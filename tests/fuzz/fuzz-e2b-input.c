/* libFuzzer harness: warren-e2b-api's checks of HTTP input (e2b-api/e2b-input.c) and the API
 * key file parser (common/api-keys.c). Beyond "no crash": every metadata pair the query
 * parser accepts passes the stored-text rule (no control character, bounded), a parsed
 * nextToken formats back to the same string, and a key file that parses formats back to a file
 * that parses to the same keys; a network key passes only when Warren knows it. The first byte
 * picks the parser. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api-keys.h"
#include "e2b-input.h"
#include "egress-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	size_t len = size - 1;
	switch (data[0] % 6) {
	case 0: {
		struct e2b_kv kv[E2B_META_MAX];
		size_t n = 0;
		if (e2b_input_parse_metadata_query(s, kv, E2B_META_MAX, &n) == 0) {
			if (n > E2B_META_MAX)
				__builtin_trap();
			for (size_t i = 0; i < n; i++)
				if (!e2b_input_text_ok(kv[i].key, strlen(kv[i].key),
						       E2B_META_KEY_MAX) ||
				    !e2b_input_text_ok(kv[i].value, strlen(kv[i].value),
						       E2B_META_VALUE_MAX))
					__builtin_trap();
			e2b_kv_free(kv, n);
		} else if (n != 0)
			__builtin_trap();
		break;
	}
	case 1: {
		uint64_t us;
		char id[E2B_ID_LEN + 1], back[E2B_TOKEN_MAX];
		if (e2b_input_parse_token(s, &us, id) == 0) {
			e2b_input_format_token(us, id, back);
			/* leading zeros are the one spelling that may differ */
			if (s[0] != '0' && strcmp(back, s))
				__builtin_trap();
		}
		unsigned m, l;
		e2b_input_parse_states(s, &m);
		e2b_input_parse_limit(s, &l);
		break;
	}
	case 2: {
		bool ok = e2b_input_text_ok(s, len, len);
		for (size_t i = 0; ok && i < len; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				__builtin_trap();
		e2b_input_template_ok(s);
		e2b_input_env_name_ok(s);
		e2b_input_id_ok(s);
		break;
	}
	case 3: {
		struct api_key *keys = calloc(64, sizeof *keys), *again = calloc(64, sizeof *again);
		size_t n = 0, n2 = 0;
		if (api_keys_parse(s, len, keys, 64, &n) == 0) {
			char *text = api_keys_format(keys, n);
			if (!text || api_keys_parse(text, strlen(text), again, 64, &n2) != 0 ||
			    n2 != n)
				__builtin_trap();
			for (size_t i = 0; i < n; i++) /* field by field: the struct has padding */
				if (strcmp(keys[i].id, again[i].id) ||
				    strcmp(keys[i].name, again[i].name) ||
				    memcmp(keys[i].digest, again[i].digest, 32) ||
				    keys[i].created != again[i].created)
					__builtin_trap();
			free(text);
		}
		free(keys);
		free(again);
		break;
	}
	case 4: {
		char out[256];
		e2b_input_unescape(s, len, out, sizeof out);
		break;
	}
	case 5: {
		/* allowOut entries split at ';', all traffic denied or not: an answer is "" (the
		 * template's) only when nothing denies all, else a policy the parser takes, never
		 * on */
		const char *allow[E2B_NETWORK_MAX], *all = "0.0.0.0/0";
		size_t n = 0;
		/* the whole input as a network key, its value's kind from the first byte: only
		 * a key Warren knows passes, and a refusal never echoes a control character */
		static const char *const known[] = {
			"allowOut",	   "denyOut", "allowPublicTraffic",
			"maskRequestHost", "rules",   "egressProxy"};
		char kwhy[256] = "";
		if (e2b_input_network_key(s, (enum e2b_json_kind)((data[0] >> 3) % 7), data[0] >> 6,
					  kwhy, sizeof kwhy) == 0) {
			bool is_known = false;
			for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
				is_known |= !strcmp(s, known[i]);
			if (!is_known)
				__builtin_trap();
		} else if (!kwhy[0] || !e2b_input_text_ok(kwhy, strlen(kwhy), sizeof kwhy))
			__builtin_trap();
		for (char *save = NULL, *t = strtok_r(s, ";", &save); t && n < E2B_NETWORK_MAX;
		     t = strtok_r(NULL, ";", &save))
			allow[n++] = t;
		bool deny_all = data[0] & 0x40;
		char out[512], why[256];
		struct egress_policy p;
		if (e2b_input_network_policy(allow, n, deny_all ? &all : NULL, deny_all, true, out,
					     sizeof out, why, sizeof why) == 0 &&
		    (deny_all ? egress_policy_parse(out, &p, why, sizeof why) < 0 ||
					p.mode == EGRESS_ON
			      : out[0] != 0))
			__builtin_trap();
		break;
	}
	}
	free(s);
	return 0;
}

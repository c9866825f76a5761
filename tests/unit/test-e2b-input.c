/* Unit tests of warren-e2b-api's input checks (e2b-api/e2b-input.c) and of the API key file
 * (common/api-keys.c): what may reach D-Bus, the state file or an answer, and what is a key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api-keys.h"
#include "e2b-api.h"
#include "e2b-input.h"

#define TXT(s) e2b_input_text_ok(s, sizeof(s) - 1, 1024)

static void
test_text(void **state)
{
	assert_true(TXT("plain"));
	assert_true(TXT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")); /* é € emoji */
	assert_true(TXT(""));
	assert_false(TXT("a\nb"));
	assert_false(TXT("a\tb"));
	assert_false(TXT("a\x1b[31m"));
	assert_false(TXT("a\x7f"));
	assert_false(TXT("a\xc2\x85"));	       /* U+0085, a C1 control (NEL) */
	assert_false(TXT("a\xc2\x9b"));	       /* U+009B, CSI */
	assert_false(TXT("\xc0\xaf"));	       /* overlong '/' */
	assert_false(TXT("\xed\xa0\x80"));     /* a surrogate */
	assert_false(TXT("\xf4\x90\x80\x80")); /* beyond U+10FFFF */
	assert_false(TXT("\xe2\x82"));	       /* truncated */
	assert_false(TXT("\xff"));
	assert_true(e2b_input_text_ok("abcd", 4, 4));
	assert_false(e2b_input_text_ok("abcde", 5, 4));
}

static void
test_names(void **state)
{
	assert_true(e2b_input_id_ok("0123456789ab"));
	assert_false(e2b_input_id_ok("0123456789AB"));
	assert_false(e2b_input_id_ok("0123456789a"));
	assert_false(e2b_input_id_ok("../../etc/pa"));
	assert_false(e2b_input_id_ok(NULL));
	assert_true(e2b_input_template_ok("base"));
	assert_true(e2b_input_template_ok("my-app_2"));
	assert_false(e2b_input_template_ok("../web"));
	assert_false(e2b_input_template_ok(""));
	assert_false(e2b_input_template_ok("a b"));
	assert_true(e2b_input_env_name_ok("PATH"));
	assert_true(e2b_input_env_name_ok("_x1"));
	assert_false(e2b_input_env_name_ok("1X"));
	assert_false(e2b_input_env_name_ok("A=B"));
	assert_false(e2b_input_env_name_ok("A B"));
	assert_false(e2b_input_env_name_ok(""));
}

static void
test_metadata_query(void **state)
{
	struct e2b_kv kv[E2B_META_MAX];
	size_t n;
	/* what the SDK sends after one decoding by the query parser: keys and values encoded */
	assert_int_equal(
		e2b_input_parse_metadata_query("user=abc&app=my%20app%26co", kv, E2B_META_MAX, &n),
		0);
	assert_int_equal(n, 2);
	assert_string_equal(kv[0].key, "user");
	assert_string_equal(kv[0].value, "abc");
	assert_string_equal(kv[1].value, "my app&co");
	e2b_kv_free(kv, n);
	assert_int_equal(e2b_input_parse_metadata_query("", kv, E2B_META_MAX, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(e2b_input_parse_metadata_query("a=", kv, E2B_META_MAX, &n), 0);
	assert_int_equal(n, 1);
	e2b_kv_free(kv, n);
	assert_int_equal(e2b_input_parse_metadata_query("a=x%0Ay", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("a=x%00y", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("a=x%C2%85", kv, E2B_META_MAX, &n),
			 -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("a=%4", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("a=%zz", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("=v", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("novalue", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(e2b_input_parse_metadata_query("a=1&b", kv, E2B_META_MAX, &n), -EINVAL);
	assert_int_equal(n, 0); /* nothing half-parsed is left */
	char big[E2B_META_VALUE_MAX + 8];
	memset(big, 'v', sizeof big);
	memcpy(big, "k=", 2);
	big[E2B_META_VALUE_MAX + 3] = 0; /* a value of MAX + 1 bytes */
	assert_true(e2b_input_parse_metadata_query(big, kv, E2B_META_MAX, &n) < 0);
	big[E2B_META_VALUE_MAX + 2] = 0; /* exactly MAX */
	assert_int_equal(e2b_input_parse_metadata_query(big, kv, E2B_META_MAX, &n), 0);
	e2b_kv_free(kv, n);
	char many[E2B_META_MAX * 8 + 16] = "";
	for (int i = 0; i <= E2B_META_MAX; i++)
		sprintf(many + strlen(many), "%sk%d=v", i ? "&" : "", i);
	assert_int_equal(e2b_input_parse_metadata_query(many, kv, E2B_META_MAX, &n), -E2BIG);
	assert_int_equal(n, 0);
}

static void
test_list_params(void **state)
{
	unsigned m, l;
	assert_int_equal(e2b_input_parse_states("running", &m), 0);
	assert_int_equal(m, E2B_STATE_RUNNING);
	assert_int_equal(e2b_input_parse_states("running,paused", &m), 0);
	assert_int_equal(m, E2B_STATE_RUNNING | E2B_STATE_PAUSED);
	assert_int_equal(e2b_input_parse_states("running,", &m), -EINVAL);
	assert_int_equal(e2b_input_parse_states("killed", &m), -EINVAL);
	assert_int_equal(e2b_input_parse_states("", &m), -EINVAL);
	assert_int_equal(e2b_input_parse_limit("1", &l), 0);
	assert_int_equal(e2b_input_parse_limit("100", &l), 0);
	assert_int_equal(l, 100);
	assert_int_equal(e2b_input_parse_limit("0", &l), -EINVAL);
	assert_int_equal(e2b_input_parse_limit("101", &l), -EINVAL);
	assert_int_equal(e2b_input_parse_limit("-1", &l), -EINVAL);
	assert_int_equal(e2b_input_parse_limit("1e2", &l), -EINVAL);
	char tok[E2B_TOKEN_MAX], id[E2B_ID_LEN + 1];
	uint64_t us;
	e2b_input_format_token(1764763200123456ull, "0123456789ab", tok);
	assert_int_equal(e2b_input_parse_token(tok, &us, id), 0);
	assert_true(us == 1764763200123456ull);
	assert_string_equal(id, "0123456789ab");
	assert_int_equal(e2b_input_parse_token("x", &us, id), -EINVAL);
	assert_int_equal(e2b_input_parse_token("_0123456789ab", &us, id), -EINVAL);
	assert_int_equal(e2b_input_parse_token("12_../../etc/pa", &us, id), -EINVAL);
	assert_int_equal(e2b_input_parse_token("99999999999999999999_0123456789ab", &us, id),
			 -EINVAL);
}

static void
test_api_keys(void **state)
{
	struct api_key keys[4], back[4];
	char k0[API_KEY_LEN + 1], k1[API_KEY_LEN + 1];
	size_t n;
	assert_int_equal(api_key_generate(k0, &keys[0], "ci"), 0);
	assert_int_equal(api_key_generate(k1, &keys[1], ""), 0);
	assert_true(api_key_well_formed(k0, strlen(k0)));
	assert_int_equal(strlen(k0), 44);
	assert_memory_not_equal(k0, k1, API_KEY_LEN);
	assert_int_equal(api_key_generate(k1, &keys[2], "bad name"), -EINVAL);
	char *text = api_keys_format(keys, 2);
	assert_non_null(text);
	assert_null(strstr(text, k0 + 4)); /* the key itself is never written */
	assert_int_equal(api_keys_parse(text, strlen(text), back, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(back[0].id, keys[0].id);
	assert_memory_equal(back[0].digest, keys[0].digest, 32);
	assert_string_equal(back[0].name, "ci");
	assert_int_equal(api_keys_match(back, n, k0, strlen(k0)), 0);
	assert_int_equal(api_keys_match(back, n, k1, strlen(k1)), 1);
	char wrong[API_KEY_LEN + 1];
	memcpy(wrong, k0, sizeof wrong);
	wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
	assert_int_equal(api_keys_match(back, n, wrong, strlen(wrong)), -ENOKEY);
	assert_int_equal(api_keys_match(back, n, "e2b_", 4), -ENOKEY);
	assert_int_equal(api_keys_match(back, n, k0, strlen(k0) - 1), -ENOKEY);
	assert_int_equal(api_keys_match(back, 0, k0, strlen(k0)), -ENOKEY);
	/* a client's key as a peer sends it: its SHA-256 in hex */
	char hex[65];
	assert_int_equal(api_key_digest_hex(k1, strlen(k1), hex), 0);
	assert_int_equal(strlen(hex), 64);
	assert_int_equal(api_keys_match_digest_hex(back, n, hex), 1);
	assert_int_equal(api_key_digest_hex(wrong, strlen(wrong), hex), 0);
	assert_int_equal(api_keys_match_digest_hex(back, n, hex), -ENOKEY);
	assert_int_equal(api_keys_match_digest_hex(back, n, NULL), -EINVAL);
	assert_int_equal(api_keys_match_digest_hex(back, n, "abc"), -EINVAL);
	hex[5] = 'G';
	assert_int_equal(api_keys_match_digest_hex(back, n, hex), -EINVAL);
	assert_int_equal(api_key_digest_hex(k0, strlen(k0), hex), 0);
	hex[0] = hex[0] == 'a' ? 'A' : hex[0]; /* upper case is not ours */
	assert_int_equal(api_keys_match_digest_hex(back, n, hex), hex[0] == 'A' ? -EINVAL : 0);
	char longer[66];
	snprintf(longer, sizeof longer, "%s0", hex);
	assert_int_equal(api_keys_match_digest_hex(back, n, longer), -EINVAL);
	/* one bad line refuses the whole file */
	size_t len = strlen(text);
	assert_int_equal(api_keys_parse(text, len - 1, back, 4, &n), -EBADMSG); /* truncated */
	char *dup = malloc(2 * len + 1);
	strcpy(dup, text);
	strcat(dup, strchr(text, '\n') + 1); /* the same two ids again */
	assert_int_equal(api_keys_parse(dup, strlen(dup), back, 4, &n), -EBADMSG);
	strcpy(dup, text);
	dup[strlen(API_KEYS_HEADER) + 3] = 'X'; /* an id that is not hex */
	assert_int_equal(api_keys_parse(dup, strlen(dup), back, 4, &n), -EBADMSG);
	strcpy(dup, text);
	dup[len - 2] = '\t'; /* a control character in a name */
	assert_int_equal(api_keys_parse(dup, strlen(dup), back, 4, &n), -EBADMSG);
	assert_int_equal(api_keys_parse("# other\n", 8, back, 4, &n), -EBADMSG);
	assert_int_equal(api_keys_parse(text, len, back, 1, &n), -E2BIG);
	free(dup);
	free(text);
}

/* the key file is trusted only when root's and closed to others; run as root for the positive
 * control (scripts/test.sh does) */
static void
test_api_keys_file(void **state)
{
	char dir[] = "/tmp/test-e2b-keys.XXXXXX", path[64];
	struct api_key rec, got[4];
	char key[API_KEY_LEN + 1];
	size_t n;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/api-keys", dir);
	assert_int_equal(api_key_generate(key, &rec, "t"), 0);
	char *text = api_keys_format(&rec, 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	if (geteuid() == 0) {
		assert_int_equal(api_keys_load(path, got, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(api_keys_match(got, n, key, strlen(key)), 0);
	}
	chmod(path, 0660); /* group-writable */
	assert_int_equal(api_keys_load(path, got, 4, &n), -EPERM);
	chmod(path, 0644); /* world-readable: the hashes would leak */
	assert_int_equal(api_keys_load(path, got, 4, &n), -EPERM);
	chmod(path, 0640);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 0), 0); /* not root's */
		assert_int_equal(api_keys_load(path, got, 4, &n), -EPERM);
	}
	char link[80];
	snprintf(link, sizeof link, "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(api_keys_load(link, got, 4, &n), -ELOOP);
	unlink(link);
	unlink(path);
	rmdir(dir);
	free(text);
}

/* the state file: every record checked as a request would be; the bad ones dropped */
static void
test_store_load(void **state)
{
	char dir[] = "/tmp/test-e2b-store.XXXXXX", path[80];
	assert_non_null(mkdtemp(dir));
	struct e2b_api a = {.max_timeout_s = 86400, .max_sandboxes = 8};
	a.state_dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
	struct e2b_sandbox *s = e2b_store_add(&a, "0123456789ab", "base");
	s->started_usec = 1;
	s->end_usec = 2;
	s->timeout_s = 300;
	s->meta[0].key = strdup("k");
	s->meta[0].value = strdup("v");
	s->n_meta = 1;
	assert_int_equal(e2b_store_save(&a), 0);
	e2b_store_remove(&a, s);
	assert_int_equal(e2b_store_load(&a), 0);
	assert_int_equal(a.n_sandboxes, 1);
	s = e2b_store_find(&a, "0123456789ab");
	assert_non_null(s);
	assert_string_equal(s->meta[0].value, "v");
	assert_true(s->end_usec == 2 && s->timeout_s == 300);
	e2b_store_remove(&a, s);
	static const char *const bad[] = {
		"\"id\":\"../../etc/pa\"",	  /* not a Warren id */
		"\"metadata\":{\"k\":\"a\\nb\"}", /* a control character */
		"\"metadata\":{\"k\":1}",	  /* not a string */
		"\"template\":\"a/b\"",		  /* not a template name */
		"\"token\":\"xyz\"",		  /* not a token */
		"\"timeout_s\":99999999",	  /* beyond --max-timeout */
		"\"extra\":1",			  /* an unknown field */
	};
	snprintf(path, sizeof path, "%s/sandboxes.json", dir);
	/* positive control: the record the cases below spoil, unspoilt, loads */
	static const char good[] =
		"{\"version\":1,\"sandboxes\":[{\"id\":\"0123456789ab\",\"template\":\"base\","
		"\"started_usec\":1,\"end_usec\":2,\"timeout_s\":3,\"auto_pause\":false,"
		"\"paused\":false,\"token\":\"\",\"metadata\":{\"k\":\"v\"}}]}";
	int gfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(gfd, good, strlen(good)), (ssize_t)strlen(good));
	close(gfd);
	assert_int_equal(e2b_store_load(&a), 0);
	assert_int_equal(a.n_sandboxes, 1);
	e2b_store_remove(&a, a.sandboxes);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char rec[1024];
		/* a good record with one field replaced (later keys win in this template) */
		const char *id = strstr(bad[i], "\"id\"") ? "" : "\"id\":\"0123456789ab\",";
		snprintf(rec, sizeof rec,
			 "{\"version\":1,\"sandboxes\":[{%s\"template\":\"base\","
			 "\"started_usec\":1,\"end_usec\":2,\"timeout_s\":3,\"auto_pause\":false,"
			 "\"paused\":false,\"token\":\"\",\"metadata\":{}}]}",
			 id);
		/* put the bad field in place of the good one */
		char *at = NULL, field[64];
		snprintf(field, sizeof field, "%.*s", (int)(strchr(bad[i], ':') - bad[i] + 1),
			 bad[i]);
		char out[1024];
		if ((at = strstr(rec, field))) {
			char *end = at + strlen(field);
			int depth = 0;
			while (*end && (depth || (*end != ',' && *end != '}'))) {
				depth += *end == '{';
				depth -= *end == '}';
				end++;
			}
			snprintf(out, sizeof out, "%.*s%s%s", (int)(at - rec), rec, bad[i], end);
		} else
			snprintf(out, sizeof out, "%.*s,%s}]}", (int)(strlen(rec) - 3), rec,
				 bad[i]);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
		close(fd);
		assert_int_equal(e2b_store_load(&a), 0);
		if (a.n_sandboxes != 0)
			fail_msg("record accepted: %s", out);
		if (!strstr(out, bad[i]))
			fail_msg("case %zu not in place: %s", i, out);
	}
	/* a state file others may write is not read */
	assert_int_equal(e2b_store_save(&a), 0);
	chmod(path, 0622);
	assert_int_equal(e2b_store_load(&a), -EPERM);
	unlink(path);
	close(a.state_dir_fd);
	rmdir(dir);
}

/* network.allowOut/denyOut and allow_internet_access -> an egress policy */
static void
test_network_policy(void **state)
{
	(void)state;
	char out[512], why[256];
	const char *all[] = {"0.0.0.0/0"}, *some[] = {"1.1.1.1", "8.8.8.0/24"};
	/* E2B allows all when nothing denies all: the template's policy */
	assert_int_equal(
		e2b_input_network_policy(NULL, 0, NULL, 0, true, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "");
	assert_int_equal(
		e2b_input_network_policy(some, 2, NULL, 0, true, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "");
	/* all traffic denied: off, or only what allowOut names */
	assert_int_equal(
		e2b_input_network_policy(NULL, 0, all, 1, true, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "off");
	assert_int_equal(
		e2b_input_network_policy(NULL, 0, NULL, 0, false, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "off");
	assert_int_equal(
		e2b_input_network_policy(some, 2, all, 1, true, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "1.1.1.1,8.8.8.0/24");
	assert_int_equal(
		e2b_input_network_policy(some, 2, NULL, 0, false, out, sizeof out, why, sizeof why),
		0);
	assert_string_equal(out, "1.1.1.1,8.8.8.0/24");
	/* refused, not loosely applied */
	const char *dns[] = {"example.com"}, *wild[] = {"*.example.com"}, *v6[] = {"::1"},
		   *port[] = {"1.2.3.4:80"}, *deny_some[] = {"10.0.0.0/8"}, *bad[] = {"1.2.3.4/33"},
		   *empty[] = {""};
	/* what Warren's deny list keeps closed stays closed: an API key holder is no operator */
	const char *world[] = {"0.0.0.0/0"}, *meta[] = {"169.254.169.254"}, *lan[] = {"10.1.2.3"},
		   *wide[] = {"8.0.0.0/5"}, *cgn[] = {"100.64.0.0/10"};
	const char *const *refused[] = {dns,   wild, v6,  port, bad, empty,
					world, meta, lan, wide, cgn};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		strcpy(out, "unchanged");
		assert_int_equal(e2b_input_network_policy(refused[i], 1, all, 1, true, out,
							  sizeof out, why, sizeof why),
				 -EINVAL);
		assert_non_null(strstr(why, "allowOut"));
	}
	assert_int_equal(e2b_input_network_policy(NULL, 0, deny_some, 1, true, out, sizeof out, why,
						  sizeof why),
			 -EINVAL);
	assert_non_null(strstr(why, "denyOut"));
	const char *many[17];
	for (size_t i = 0; i < 17; i++)
		many[i] = "1.2.3.4";
	assert_int_equal(
		e2b_input_network_policy(many, 17, all, 1, true, out, sizeof out, why, sizeof why),
		-EINVAL);
	assert_int_equal(
		e2b_input_network_policy(many, 16, all, 1, true, out, sizeof out, why, sizeof why),
		0);
}

/* network's other keys: accepted only when they ask for what Warren does anyway */
static void
test_network_key(void **state)
{
	(void)state;
	char why[256];
	const struct {
		const char *key;
		enum e2b_json_kind kind;
		size_t n;
		int r;
		const char *says; /* in why, when refused */
	} cases[] = {
		/* honoured: their entries are e2b_input_network_policy's */
		{"allowOut", E2B_JSON_ARRAY, 2, 0, NULL},
		{"denyOut", E2B_JSON_NULL, 0, 0, NULL},
		/* what Warren does anyway */
		{"allowPublicTraffic", E2B_JSON_TRUE, 0, 0, NULL},
		{"allowPublicTraffic", E2B_JSON_NULL, 0, 0, NULL},
		{"maskRequestHost", E2B_JSON_NULL, 0, 0, NULL},
		{"rules", E2B_JSON_OBJECT, 0, 0, NULL},
		{"rules", E2B_JSON_NULL, 0, 0, NULL},
		{"egressProxy", E2B_JSON_NULL, 0, 0, NULL},
		/* what it does not: refused, not dropped */
		{"allowPublicTraffic", E2B_JSON_FALSE, 0, -EINVAL, "allowPublicTraffic only true"},
		{"allowPublicTraffic", E2B_JSON_STRING, 0, -EINVAL, "allowPublicTraffic only true"},
		{"maskRequestHost", E2B_JSON_STRING, 0, -EINVAL, "maskRequestHost"},
		{"maskRequestHost", E2B_JSON_NUMBER, 0, -EINVAL, "maskRequestHost"},
		{"rules", E2B_JSON_OBJECT, 1, -EINVAL, "rules"},
		{"rules", E2B_JSON_ARRAY, 0, -EINVAL, "rules"},
		{"egressProxy", E2B_JSON_OBJECT, 0, -EINVAL, "egressProxy"},
		{"egressProxy", E2B_JSON_STRING, 0, -EINVAL, "egressProxy"},
		/* unknown keys, whatever they hold; a key with a control character is not echoed */
		{"httpsPorts", E2B_JSON_ARRAY, 0, -EINVAL, "network.httpsPorts: unknown key"},
		{"allowout", E2B_JSON_ARRAY, 0, -EINVAL, "unknown key"},
		{"", E2B_JSON_NULL, 0, -EINVAL, "unknown key"},
		{"a\nb", E2B_JSON_NULL, 0, -EINVAL, "network: an unknown key"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		strcpy(why, "");
		assert_int_equal(e2b_input_network_key(cases[i].key, cases[i].kind, cases[i].n, why,
						       sizeof why),
				 cases[i].r);
		if (cases[i].says)
			assert_non_null(strstr(why, cases[i].says));
	}
}

/* what the E2B front door on a cluster writes in a request line to another host */
static void
test_uri(void **state)
{
	(void)state;
	assert_true(e2b_input_uri_ok("/sandboxes"));
	assert_true(e2b_input_uri_ok("/v2/sandboxes?limit=2&metadata=a%3Db&nextToken=x_y-z"));
	assert_true(e2b_input_uri_ok("/sandboxes/0123456789ab/timeout"));
	assert_false(e2b_input_uri_ok(NULL));
	assert_false(e2b_input_uri_ok(""));
	assert_false(e2b_input_uri_ok("/sandboxes HTTP/1.1"));
	assert_false(e2b_input_uri_ok("/sandboxes\r\nX-Warren-E2b-Peer: x"));
	assert_false(e2b_input_uri_ok("/sandboxes\n"));
	assert_false(e2b_input_uri_ok("/sand\x01boxes"));
	assert_false(e2b_input_uri_ok("/sandboxes\t"));
	assert_false(e2b_input_uri_ok("/sandboxes\x7f"));
	assert_false(e2b_input_uri_ok("/sandboxes/caf\xc3\xa9"));
	assert_false(e2b_input_uri_ok("/sandboxes\xff"));
}

static struct e2b_list_entry
entry(const char *id, uint64_t started, unsigned origin)
{
	struct e2b_list_entry e = {.started_usec = started, .origin = origin};
	snprintf(e.id, sizeof e.id, "%s", id);
	e.j = json_pack("{s:s, s:i}", "sandboxID", id, "origin", (int)origin);
	return e;
}

/* a list merged from several hosts: in order of start then id, each id once, this host's
 * entry kept over a peer's; the JSON of the dropped ones freed (valgrind) */
static void
test_list_sort(void **state)
{
	(void)state;
	assert_int_equal(e2b_list_sort(NULL, 0), 0);
	struct e2b_list_entry v[8];
	size_t n = 0;
	v[n++] = entry("00000000000c", 30, 0);
	v[n++] = entry("00000000000a", 10, 1);
	v[n++] = entry("00000000000b", 20, 1);
	v[n++] = entry("00000000000c", 5, 1); /* a peer's copy of this host's: dropped */
	v[n++] = entry("00000000000a", 10, 1);
	v[n++] = entry("00000000000d", 20, 1);
	v[n++] = entry("00000000000b", 20, 1);
	n = e2b_list_sort(v, n);
	assert_int_equal(n, 4);
	assert_string_equal(v[0].id, "00000000000a");
	assert_string_equal(v[1].id, "00000000000b");
	assert_string_equal(v[2].id, "00000000000d"); /* same start: by id */
	assert_string_equal(v[3].id, "00000000000c");
	assert_int_equal(v[3].started_usec, 30);
	assert_int_equal(json_integer_value(json_object_get(v[3].j, "origin")), 0);
	for (size_t i = 0; i < n; i++)
		json_decref(v[i].j);

	/* many, all duplicated: n log n, not n^2, and each kept once */
	size_t big = 20000;
	struct e2b_list_entry *w = calloc(2 * big, sizeof *w);
	assert_non_null(w);
	for (size_t i = 0; i < 2 * big; i++) {
		char id[E2B_ID_LEN + 1];
		snprintf(id, sizeof id, "%012zx", i % big);
		w[i] = entry(id, (uint64_t)(big - i % big), i < big ? 0 : 1);
	}
	n = e2b_list_sort(w, 2 * big);
	assert_int_equal(n, big);
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(w[i - 1].started_usec < w[i].started_usec);
		assert_int_equal(json_integer_value(json_object_get(w[i].j, "origin")), 0);
		json_decref(w[i].j);
	}
	free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),	       cmocka_unit_test(test_names),
		cmocka_unit_test(test_metadata_query), cmocka_unit_test(test_list_params),
		cmocka_unit_test(test_api_keys),       cmocka_unit_test(test_api_keys_file),
		cmocka_unit_test(test_store_load),     cmocka_unit_test(test_network_policy),
		cmocka_unit_test(test_network_key),    cmocka_unit_test(test_uri),
		cmocka_unit_test(test_list_sort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

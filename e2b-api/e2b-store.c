/* warren-e2b-api: its sandbox records (template, lifetime, metadata, access token) and the
 * state file that keeps them across restarts: <state-dir>/sandboxes.json, written to a
 * temporary file, fsynced and renamed (a crash leaves the old or the new file, never half of
 * one), read back strictly at start (a record that fails any check of e2b-input.h is dropped
 * with a log line, as if it came from HTTP). */
#include "e2b-api.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STATE_FILE "sandboxes.json"
#define STATE_TMP ".sandboxes.json.tmp"
#define STATE_MAX (16 * 1024 * 1024)

uint64_t
e2b_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

struct e2b_sandbox *
e2b_store_find(struct e2b_api *a, const char *id)
{
	for (struct e2b_sandbox *s = a->sandboxes; s; s = s->next)
		if (!strcmp(s->id, id))
			return s;
	return NULL;
}

struct e2b_sandbox *
e2b_store_add(struct e2b_api *a, const char *id, const char *template)
{
	struct e2b_sandbox *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	snprintf(s->id, sizeof s->id, "%s", id);
	snprintf(s->template, sizeof s->template, "%s", template);
	s->next = a->sandboxes;
	a->sandboxes = s;
	a->n_sandboxes++;
	return s;
}

void
e2b_store_remove(struct e2b_api *a, struct e2b_sandbox *s)
{
	for (struct e2b_sandbox **p = &a->sandboxes; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			a->n_sandboxes--;
			e2b_kv_free(s->meta, s->n_meta);
			explicit_bzero(s->token, sizeof s->token);
			free(s);
			return;
		}
}

static json_t *
record_to_json(const struct e2b_sandbox *s)
{
	json_t *meta = json_object();
	for (size_t i = 0; i < s->n_meta; i++)
		json_object_set_new(meta, s->meta[i].key, json_string(s->meta[i].value));
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:b, s:b, s:s, s:o}", "id", s->id, "template",
			 s->template, "started_usec", (json_int_t)s->started_usec, "end_usec",
			 (json_int_t)s->end_usec, "timeout_s", (json_int_t)s->timeout_s,
			 "auto_pause", s->auto_pause, "paused", s->paused, "token", s->token,
			 "metadata", meta);
}

int
e2b_store_save(struct e2b_api *a)
{
	json_t *list = json_array();
	for (struct e2b_sandbox *s = a->sandboxes; s; s = s->next)
		json_array_append_new(list, record_to_json(s));
	json_t *root = json_pack("{s:i, s:o}", "version", 1, "sandboxes", list);
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text)
		return log_error_errno(-ENOMEM, "Cannot encode the state file");
	size_t len = strlen(text);
	int r = 0;
	int fd = openat(a->state_dir_fd, STATE_TMP,
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t k = write(fd, text + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			goto out;
		}
		off += (size_t)k;
	}
	if (fsync(fd) < 0 ||
	    renameat(a->state_dir_fd, STATE_TMP, a->state_dir_fd, STATE_FILE) < 0 ||
	    fsync(a->state_dir_fd) < 0)
		r = -errno;
out:
	if (fd >= 0)
		close(fd);
	free(text);
	if (r < 0)
		return log_error_errno(r, "Cannot write the state file: %m");
	return 0;
}

static bool
token_ok(const char *t)
{
	size_t len = strlen(t);
	if (len != 0 && len != E2B_TOKEN_HEX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
			return false;
	return true;
}

/* one record from the file, checked as strictly as a request */
static int
record_from_json(struct e2b_api *a, json_t *j)
{
	const char *id = NULL, *template = NULL, *token = NULL;
	json_int_t started = -1, end = -1, timeout = -1;
	int auto_pause = 0, paused = 0;
	json_t *meta = NULL;
	if (json_unpack(j, "{s:s, s:s, s:I, s:I, s:I, s:b, s:b, s:s, s:o !}", "id", &id, "template",
			&template, "started_usec", &started, "end_usec", &end, "timeout_s",
			&timeout, "auto_pause", &auto_pause, "paused", &paused, "token", &token,
			"metadata", &meta) < 0)
		return -EBADMSG;
	if (!e2b_input_id_ok(id) || !e2b_input_template_ok(template) || !token_ok(token) ||
	    started < 0 || end < 0 || timeout < 0 || timeout > (json_int_t)a->max_timeout_s ||
	    !json_is_object(meta) || json_object_size(meta) > E2B_META_MAX)
		return -EBADMSG;
	if (e2b_store_find(a, id))
		return -EEXIST;
	if (a->n_sandboxes >= a->max_sandboxes)
		return -E2BIG;
	const char *k;
	json_t *v;
	json_object_foreach(meta, k, v)
	{
		if (!json_is_string(v) || !e2b_input_text_ok(k, strlen(k), E2B_META_KEY_MAX) ||
		    !e2b_input_text_ok(json_string_value(v), json_string_length(v),
				       E2B_META_VALUE_MAX) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return -EBADMSG;
	}
	struct e2b_sandbox *s = e2b_store_add(a, id, template);
	if (!s)
		return -ENOMEM;
	s->started_usec = (uint64_t)started;
	s->end_usec = (uint64_t)end;
	s->timeout_s = (uint32_t)timeout;
	s->auto_pause = auto_pause;
	s->paused = paused;
	snprintf(s->token, sizeof s->token, "%s", token);
	json_object_foreach(meta, k, v)
	{
		s->meta[s->n_meta].key = strdup(k);
		s->meta[s->n_meta].value = strdup(json_string_value(v));
		s->n_meta++;
		if (!s->meta[s->n_meta - 1].key || !s->meta[s->n_meta - 1].value)
			return -ENOMEM; /* the sandbox's entry frees what was copied */
	}
	return 0;
}

int
e2b_store_load(struct e2b_api *a)
{
	_cleanup_close_ int fd =
		openat(a->state_dir_fd, STATE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return log_error_errno(-errno, "Cannot open the state file: %m");
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return log_error_errno(-errno, "Cannot stat the state file: %m");
	/* only a file this daemon wrote is read: its own, not writable by others */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022) ||
	    st.st_size > STATE_MAX)
		return log_error_errno(-EPERM,
				       "Ignoring the state file: not a regular file of mine, "
				       "writable by others or larger than %d bytes",
				       STATE_MAX);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	json_error_t err;
	json_t *root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &err);
	json_t *list = NULL;
	json_int_t version = 0;
	if (!root || json_unpack(root, "{s:I, s:o}", "version", &version, "sandboxes", &list) < 0 ||
	    version != 1 || !json_is_array(list)) {
		json_decref(root);
		return log_error_errno(-EBADMSG,
				       "Ignoring the state file: not a version 1 record "
				       "list (%s)",
				       root ? "wrong shape" : err.text);
	}
	size_t i, loaded = 0;
	json_t *j;
	json_array_foreach(list, i, j)
	{
		int r = record_from_json(a, j);
		if (r < 0)
			log_warning_errno(r, "State file: record %zu dropped: %m", i);
		else
			loaded++;
	}
	json_decref(root);
	log_info("State file: %zu sandboxes", loaded);
	return 0;
}

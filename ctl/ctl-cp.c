/* warrenctl cp: a regular file into a sandbox (POST /files, a chunked multipart body read from
 * the file as it goes) or out of one (GET /files, written to the file as it comes), through the
 * gateway to the sandbox's agent. Neither side is ever held whole in memory. A download goes to
 * a temporary file next to the destination, renamed over it only once complete, so a failed
 * copy leaves the old file as it was. Runs in warrenctl. */
#include "ctl-agent.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_CHUNK (256 * 1024)

/* podman cp: "ID:PATH" when a colon comes before any '/' (so ./a:b is a host path). */
static bool
is_remote(const char *s, char *id, size_t id_size, const char **path)
{
	const char *colon = strchr(s, ':'), *slash = strchr(s, '/');
	if (!colon || (slash && slash < colon) || colon == s || (size_t)(colon - s) >= id_size)
		return false;
	memcpy(id, s, (size_t)(colon - s));
	id[colon - s] = 0;
	*path = colon + 1;
	return true;
}

int
ctl_cp_parse(const char *src, const char *dst, struct cp_spec *s)
{
	char id2[64];
	const char *p1, *p2;
	bool r1 = is_remote(src, s->id, sizeof s->id, &p1);
	bool r2 = is_remote(dst, id2, sizeof id2, &p2);
	if (r1 == r2) {
		fprintf(stderr, "warrenctl: cp: exactly one of SRC and DST must be ID:PATH (a "
				"host path with a colon can be written ./a:b)\n");
		return -EINVAL;
	}
	if (r2)
		memcpy(s->id, id2, sizeof id2);
	s->to_sandbox = r2;
	s->inside = r2 ? p2 : p1;
	s->host = r2 ? src : dst;
	if (!s->inside[0] || !s->host[0]) {
		fprintf(stderr, "warrenctl: cp: an empty path\n");
		return -EINVAL;
	}
	for (const char *p = s->inside; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "warrenctl: cp: a control character in the path\n");
			return -EINVAL;
		}
	return 0;
}

static int
say(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "warrenctl: cp: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

static int
say_status(const struct agent_target *t, int status, bool gw, json_t *answer)
{
	char *body = answer ? (json_is_string(answer) ? strdup(json_string_value(answer))
						      : json_dumps(answer, JSON_COMPACT))
			    : NULL;
	char msg[768];
	agent_describe_status(t, status, gw, body, msg, sizeof msg);
	free(body);
	return say("%s%s", msg, "");
}

static int
say_conn(const struct agent_target *t, int r)
{
	char msg[256];
	snprintf(msg, sizeof msg, "%s", strerror(r == -EAGAIN ? ETIMEDOUT : -r));
	if (r == -ECONNREFUSED)
		return say("cannot reach the gateway at %s (%s): is warren-gateway running?",
			   t->url, msg);
	return say("talking to the gateway at %s: %s", t->url, msg);
}

/* Stat inside: 1 a directory, 0 a regular file, -ENOENT none; any other failure printed (1
 * returned as -EIO). */
static int
stat_inside(const struct agent_target *t, const char *path, bool *is_dir)
{
	json_t *req = json_pack("{s:s}", "path", path), *ans = NULL;
	if (!req)
		return say("%s%s", "out of memory", ""), -EIO;
	int status = 0;
	bool gw = false;
	int r = agent_unary(t, "filesystem.Filesystem/Stat", req, &status, &gw, &ans);
	json_decref(req);
	if (r < 0)
		return say_conn(t, r), -EIO;
	if (status == 404 && !gw) {
		json_decref(ans);
		return -ENOENT;
	}
	if (status != 200) {
		say_status(t, status, gw, ans);
		json_decref(ans);
		return -EIO;
	}
	const char *type =
		json_string_value(json_object_get(json_object_get(ans, "entry"), "type"));
	*is_dir = type && !strcmp(type, "FILE_TYPE_DIRECTORY");
	bool reg = type && !strcmp(type, "FILE_TYPE_FILE");
	json_decref(ans);
	return *is_dir || reg ? 0 : -EPERM;
}

static const char *
base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int
read_fail(const struct agent_target *t, struct http_resp *resp)
{
	char *body = NULL;
	size_t len = 0;
	if (http_resp_read_all(resp, &body, &len, 64 * 1024) < 0)
		body = NULL;
	char msg[768];
	agent_describe_status(t, resp->status, resp->gateway_error, body, msg, sizeof msg);
	free(body);
	return say("%s%s", msg, "");
}

static int
cp_in(const struct agent_target *t, const struct cp_spec *s)
{
	int fd = 0;
	bool from_stdin = !strcmp(s->host, "-");
	if (!from_stdin) {
		fd = open(s->host, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return say("%s: %s", s->host, strerror(errno));
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return say("%s: %s", s->host,
				   S_ISDIR(st.st_mode)
					   ? "is a directory (cp copies regular files only)"
					   : "not a regular file (cp copies regular files only)");
		}
	}
	/* DST a directory inside (or ending in '/'): the file goes into it under its own name */
	char dest[PATH_MAX];
	bool is_dir = false;
	size_t il = strlen(s->inside);
	int r = stat_inside(t, s->inside, &is_dir);
	if (r == -EIO || r == -EPERM) {
		if (fd > 0)
			close(fd);
		return r == -EPERM ? say("%s in sandbox %s is not a regular file", s->inside, t->id)
				   : 1;
	}
	if (is_dir || s->inside[il - 1] == '/') {
		if (from_stdin) {
			return say("%s in sandbox %s is a directory: name the file to write",
				   s->inside, t->id);
		}
		snprintf(dest, sizeof dest, "%s%s%s", s->inside,
			 s->inside[il - 1] == '/' ? "" : "/", base_name(s->host));
	} else
		snprintf(dest, sizeof dest, "%s", s->inside);

	char enc[3 * PATH_MAX + 1], target[3 * PATH_MAX + 64], boundary[40], head[512];
	uint8_t rnd[16];
	if (url_encode(dest, enc, sizeof enc) < 0 || getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
		if (fd > 0)
			close(fd);
		return say("%s: %s", dest, "path too long, or no random bytes for a boundary");
	}
	snprintf(target, sizeof target, "/files?path=%s", enc);
	int o = snprintf(boundary, sizeof boundary, "warrenctl-");
	for (size_t i = 0; i < sizeof rnd; i++)
		o += snprintf(boundary + o, sizeof boundary - (size_t)o, "%02x", rnd[i]);
	char ct[96];
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", boundary);
	int hl = snprintf(head, sizeof head,
			  "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
			  "filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n",
			  boundary);

	int sock = agent_connect(t, 120);
	if (sock < 0) {
		if (fd > 0)
			close(fd);
		return say_conn(t, sock);
	}
	char *buf = malloc(IO_CHUNK);
	r = buf ? agent_send_head(sock, t, "POST", target, ct, -1, true) : -ENOMEM;
	if (r >= 0)
		r = agent_write_chunk(sock, head, (size_t)hl);
	int read_err = 0;
	while (r >= 0) {
		ssize_t k = read(fd, buf, IO_CHUNK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			read_err = errno;
			break;
		}
		if (k == 0)
			break;
		r = agent_write_chunk(sock, buf, (size_t)k);
	}
	free(buf);
	if (fd > 0)
		close(fd);
	if (read_err) {
		close(sock);
		return say("%s: %s", from_stdin ? "stdin" : s->host, strerror(read_err));
	}
	char tail[64];
	int tl = snprintf(tail, sizeof tail, "\r\n--%s--\r\n", boundary);
	if (r >= 0)
		r = agent_write_chunk(sock, tail, (size_t)tl);
	if (r >= 0)
		r = agent_write_chunk(sock, NULL, 0);
	/* a refusal may come before the body is all sent: read the answer either way */
	struct http_resp resp = {0};
	int hr = http_resp_read_head(&resp, sock);
	int rc = 0;
	if (hr < 0)
		rc = say_conn(t, r < 0 ? r : hr);
	else if (resp.status != 200)
		rc = read_fail(t, &resp);
	http_resp_done(&resp);
	close(sock);
	return rc;
}

static int
cp_out(const struct agent_target *t, const struct cp_spec *s)
{
	bool is_dir = false;
	int r = stat_inside(t, s->inside, &is_dir);
	if (r == -ENOENT)
		return say("no such file in sandbox %s: %s", t->id, s->inside);
	if (r == -EPERM || (r == 0 && is_dir))
		return say(is_dir ? "%s in sandbox %s is a directory (cp copies regular files only)"
				  : "%s in sandbox %s is not a regular file",
			   s->inside, t->id);
	if (r < 0)
		return 1;

	/* where it goes: stdout; a directory's entry of its name; a device or FIFO as it is;
	 * else a temporary file renamed over the destination at the end */
	char dest[PATH_MAX], tmp[PATH_MAX + 16] = "";
	int fd = 1;
	struct stat st;
	bool to_stdout = !strcmp(s->host, "-");
	if (!to_stdout) {
		if (stat(s->host, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(dest, sizeof dest, "%s/%s", s->host, base_name(s->inside));
		else
			snprintf(dest, sizeof dest, "%s", s->host);
		if (stat(dest, &st) == 0 && !S_ISREG(st.st_mode)) {
			if (S_ISDIR(st.st_mode))
				return say("%s: %s", dest, "is a directory");
			fd = open(dest, O_WRONLY | O_CLOEXEC);
		} else {
			char d[PATH_MAX];
			snprintf(d, sizeof d, "%s", dest);
			snprintf(tmp, sizeof tmp, "%s/.warrenctl-cp-XXXXXX", dirname(d));
			fd = mkostemp(tmp, O_CLOEXEC);
			mode_t um = umask(0);
			umask(um);
			if (fd >= 0 && fchmod(fd, 0666 & ~um) < 0) {
				/* keeps mkostemp's 0600: stricter, not wrong */
			}
		}
		if (fd < 0)
			return say("%s: %s", dest, strerror(errno));
	}

	char enc[3 * PATH_MAX + 1], target[3 * PATH_MAX + 64];
	int rc = 0;
	int sock = -1;
	char *buf = NULL;
	struct http_resp resp = {0};
	if (url_encode(s->inside, enc, sizeof enc) < 0) {
		rc = say("%s: %s", s->inside, "path too long");
		goto out;
	}
	snprintf(target, sizeof target, "/files?path=%s", enc);
	sock = agent_connect(t, 120);
	if (sock < 0) {
		rc = say_conn(t, sock);
		goto out;
	}
	r = agent_send_head(sock, t, "GET", target, NULL, 0, true);
	if (r >= 0)
		r = http_resp_read_head(&resp, sock);
	if (r < 0) {
		rc = say_conn(t, r);
		goto out;
	}
	if (resp.status != 200) {
		rc = read_fail(t, &resp);
		goto out;
	}
	buf = malloc(IO_CHUNK);
	if (!buf) {
		rc = say("%s%s", "out of memory", "");
		goto out;
	}
	for (;;) {
		ssize_t k = http_resp_read_body(&resp, buf, IO_CHUNK);
		if (k < 0) {
			rc = k == -EPIPE
				     ? say("sandbox %s: %s", t->id, "the download was cut short")
				     : say_conn(t, (int)k);
			goto out;
		}
		if (k == 0)
			break;
		for (ssize_t w = 0; w < k;) {
			ssize_t n = write(fd, buf + w, (size_t)(k - w));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				rc = say("%s: %s", to_stdout ? "stdout" : dest,
					 strerror(n < 0 ? errno : EIO));
				goto out;
			}
			w += n;
		}
	}
	if (tmp[0]) {
		if (close(fd) < 0 || rename(tmp, dest) < 0) {
			fd = -1;
			rc = say("%s: %s", dest, strerror(errno));
			goto out;
		}
		fd = -1;
		tmp[0] = 0;
	}
out:
	free(buf);
	http_resp_done(&resp);
	if (sock >= 0)
		close(sock);
	if (fd > 1)
		close(fd);
	if (tmp[0])
		unlink(tmp);
	if (to_stdout && !rc && fflush(stdout) != 0)
		rc = 1;
	return rc;
}

int
ctl_cp_run(const struct agent_target *t, const struct cp_spec *s)
{
	return s->to_sandbox ? cp_in(t, s) : cp_out(t, s);
}

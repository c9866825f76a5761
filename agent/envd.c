/* E2B's envd API, served by warren-agent inside every sandbox (gVisor container or microVM) on
 * port 49983: Connect RPCs with JSON bodies (process.Process, filesystem.Filesystem; server
 * streams as enveloped connect+json over a chunked HTTP/1.1 answer) and envd's REST paths
 * (/files, /health, /init, /envs, /metrics). One thread, one epoll set; nothing blocks on a
 * client. The request head is parsed by the gateway's strict parser (gateway/http-parse.c), the
 * rest by envd-proto.c; both are fuzzed.
 *
 * Everything a client can grow is bounded: connections (MAX_CONNS), a request head
 * (HTTP_MAX_HEAD), a unary body or envelope (ENVD_MAX_BODY), an answer's queue (OUT_HIGH: a
 * stream stops reading its process or watch until the client reads; a download reads its file
 * only as the socket drains), processes (MAX_PROCS), subscribers per process, watchers and
 * their watches and queued events, a directory listing's entries. Uploads go to their file as
 * they arrive: the sandbox's own disk is their only limit.
 *
 * No connection is left idle long, and every close is an RST once the answer is out: an open or
 * TIME_WAIT TCP connection inside a gVisor sandbox makes its checkpoint fail (docs/FACTS). */
#include "envd.h"
#include "agent-protocol.h"
#include "base64.h"
#include "envd-proto.h"
#include "http-parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 256
#define MAX_PROCS 512
#define MAX_SUBS 8 /* streams attached to one process */
#define MAX_WATCHERS 64
#define MAX_WATCHES 4096       /* directories one recursive watcher follows */
#define MAX_QUEUED_EVENTS 4096 /* events a CreateWatcher holds until GetWatcherEvents */
#define MAX_LIST_ENTRIES 100000
#define IN_SIZE (HTTP_MAX_HEAD + 65536)
#define MP_SIZE (65536 + 128)
#define OUT_HIGH (1u << 20) /* a stream or download stops producing above this */
#define OUT_LOW (256u << 10)
#define READ_CHUNK 65536
#define IDLE_MS 15000 /* a keep-alive connection without a request */
#define HEAD_MS 10000
#define BODY_MS 60000	   /* no progress on a request body */
#define LINGER_MS 2000	   /* waiting for the client's close after "Connection: close" */
#define KEEPALIVE_MS 30000 /* stream keepalive events (the gateway cuts 120 s of silence) */

struct handler {
	int fd;
	void (*cb)(struct handler *h, uint32_t events);
};

struct user {
	char name[64];
	uid_t uid;
	gid_t gid;
	char home[PATH_MAX];
};

enum cstate { C_HEAD, C_BODY, C_UPLOAD, C_STREAM, C_DOWNLOAD, C_WRITE, C_LINGER };
enum stream_kind { ST_NONE, ST_PROC, ST_WATCH };

struct proc;
struct watcher;

struct conn {
	struct handler h;
	struct conn *next;
	bool dead;
	enum cstate state;
	char in[IN_SIZE];
	size_t in_len;
	/* the request */
	enum envd_route route;
	bool keep_alive, head_method, enveloped;
	char query[8192];
	size_t query_len;
	char token[256];
	bool has_token;
	char auth_user[64];
	unsigned keepalive_ms;
	enum http_body body_kind;
	uint64_t body_left;
	struct envd_chunked chunk;
	bool body_done;
	char *body;
	size_t body_len, body_cap;
	/* upload */
	struct envd_multipart *mp;
	char *mpbuf;
	size_t mp_len;
	int up_fd;
	int up_err;
	char up_path[PATH_MAX];
	bool up_path_used;
	json_t *up_entries;
	struct user user;
	/* download */
	int dl_fd;
	uint64_t dl_left;
	/* streams */
	enum stream_kind stream;
	struct proc *proc;
	struct watcher *watch;
	uint64_t next_keepalive;
	/* the answer */
	char *out;
	size_t out_len, out_cap, out_off;
	uint64_t deadline;    /* ms, CLOCK_MONOTONIC; 0 none */
	uint64_t stall_until; /* C_LINGER/C_HEAD: the client has not read our answer yet */
	int last_outq;
};

struct pipe_h {
	struct handler h;
	struct proc *p;
	const char *field; /* "stdout", "stderr", "pty" */
};

struct proc {
	struct proc *next;
	pid_t pid;
	char *tag;
	json_t *config; /* ProcessConfig as given, for List */
	int in_fd;	/* stdin pipe or the PTY master; -1 closed */
	struct pipe_h out, err;
	bool pty;
	struct conn *subs[MAX_SUBS];
	bool paused;
};

struct watcher {
	struct handler h; /* its inotify fd */
	struct watcher *next;
	bool dead;
	char id[33];
	char root[PATH_MAX];
	bool recursive;
	struct {
		int wd;
		char *rel;
	} * wds;
	size_t n_wds;
	struct conn *sub; /* WatchDir's stream; NULL for CreateWatcher */
	json_t *queue;	  /* CreateWatcher: events until GetWatcherEvents */
	bool overflowed;
};

static int epfd = -1;
static struct handler listener;
static struct conn *conns;
static unsigned n_conns;
static struct proc *procs;
static unsigned n_procs;
static struct watcher *watchers;
static unsigned n_watchers;
static char **base_env;
static json_t *init_envs; /* /init envVars */
static char *access_token;
static char default_user[64] = "root";
static char default_workdir[PATH_MAX];

static uint64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
ep_set(struct handler *h, uint32_t events, int op)
{
	struct epoll_event ev = {.events = events, .data.ptr = h};
	epoll_ctl(epfd, op, h->fd, &ev);
}

/* ---- output ---- */

static bool
out_append(struct conn *c, const void *p, size_t n)
{
	if (c->out_off && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + n)
			cap *= 2;
		char *q = realloc(c->out, cap);
		if (!q)
			return false;
		c->out = q;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return true;
}

static void
out_printf(struct conn *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		out_append(c, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static size_t
out_pending(const struct conn *c)
{
	return c->out_len - c->out_off;
}

static void conn_close(struct conn *c, bool rst);
static void conn_after_flush(struct conn *c);
static void proc_resume(struct proc *p);
static void conn_process(struct conn *c);

static void
conn_events(struct conn *c)
{
	if (c->dead)
		return;
	uint32_t ev = EPOLLRDHUP;
	/* a stream or download reads the client only to see it go */
	ev |= EPOLLIN;
	if (out_pending(c))
		ev |= EPOLLOUT;
	ep_set(&c->h, ev, EPOLL_CTL_MOD);
}

/* Write what is queued; false when the connection broke (and was closed). */
static bool
conn_flush(struct conn *c)
{
	while (out_pending(c)) {
		ssize_t k = send(c->h.fd, c->out + c->out_off, out_pending(c), MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			break;
		if (k <= 0) {
			conn_close(c, true);
			return false;
		}
		c->out_off += (size_t)k;
	}
	if (!out_pending(c))
		c->out_off = c->out_len = 0;
	if (out_pending(c) < OUT_LOW && c->stream == ST_PROC && c->proc)
		proc_resume(c->proc);
	conn_events(c);
	return true;
}

/* ---- answers ---- */

static json_t *
jstr(const char *s)
{
	/* file names need not be UTF-8: replace what is not, so the answer stays JSON */
	json_t *v = json_string(s);
	if (v)
		return v;
	size_t n = strlen(s);
	char *t = malloc(n * 3 + 1), *o = t;
	if (!t)
		return json_string("");
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int len = *p < 0x80	    ? 1
			  : (*p >> 5) == 6  ? 2
			  : (*p >> 4) == 14 ? 3
			  : (*p >> 3) == 30 ? 4
					    : 0;
		bool ok = len > 0;
		for (int i = 1; ok && i < len; i++)
			ok = (p[i] & 0xc0) == 0x80;
		if (ok) {
			memcpy(o, p, (size_t)len);
			o += len;
			p += len;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = 0;
	v = json_string(t);
	free(t);
	return v ? v : json_string("");
}

static const char *
status_text(int s)
{
	switch (s) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Content Too Large";
	case 415:
		return "Unsupported Media Type";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 507:
		return "Insufficient Storage";
	default:
		return s >= 500 ? "Internal Server Error" : "Error";
	}
}

/* A whole answer with a body; the connection goes on (keep-alive) or closes after it. */
static void
respond(struct conn *c, int status, const char *type, const char *body, size_t len)
{
	c->state = C_WRITE;
	out_printf(c, "HTTP/1.1 %d %s\r\n", status, status_text(status));
	if (type)
		out_printf(c, "Content-Type: %s\r\n", type);
	if (status != 204)
		out_printf(c, "Content-Length: %zu\r\n", len);
	if (!c->keep_alive)
		out_printf(c, "Connection: close\r\n");
	out_printf(c, "\r\n");
	if (!c->head_method && len)
		out_append(c, body, len);
	if (conn_flush(c))
		conn_after_flush(c);
}

static void
respond_json(struct conn *c, int status, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s) {
		respond(c, 500, "application/json", "{}", 2);
		return;
	}
	respond(c, status, "application/json", s, strlen(s));
	free(s);
}

/* envd's REST error body */
static void
respond_rest_error(struct conn *c, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	respond_json(c, status, json_pack("{s:o,s:i}", "message", jstr(msg), "code", status));
}

/* A Connect error: unary as an HTTP status and JSON; a stream as its end message. */
static void
rpc_error(struct conn *c, enum envd_code code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *err =
		json_pack("{s:s,s:o}", "code", envd_code_to_string(code), "message", jstr(msg));
	if (!c->enveloped) {
		respond_json(c, envd_code_http_status(code), err);
		return;
	}
	json_t *end = json_pack("{s:o}", "error", err);
	char *s = json_dumps(end, JSON_COMPACT);
	json_decref(end);
	size_t n = s ? strlen(s) : 0;
	char *body = malloc(n + 5);
	if (!body) {
		free(s);
		conn_close(c, true);
		return;
	}
	body[0] = ENVD_ENVELOPE_END;
	body[1] = (char)(n >> 24);
	body[2] = (char)(n >> 16);
	body[3] = (char)(n >> 8);
	body[4] = (char)n;
	if (n)
		memcpy(body + 5, s, n);
	free(s);
	respond(c, 200, "application/connect+json", body, n + 5);
	free(body);
}

/* The head of a server stream: chunked, so the connection survives it. */
static void
stream_begin(struct conn *c, enum stream_kind kind)
{
	c->state = C_STREAM;
	c->stream = kind;
	c->next_keepalive = now_ms() + c->keepalive_ms;
	out_printf(c,
		   "HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\n"
		   "Transfer-Encoding: chunked\r\n%s\r\n",
		   c->keep_alive ? "" : "Connection: close\r\n");
}

static void
stream_msg(struct conn *c, uint8_t flags, const char *json, size_t n)
{
	if (c->dead || c->state != C_STREAM)
		return;
	uint8_t hdr[5] = {flags, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8),
			  (uint8_t)n};
	out_printf(c, "%zx\r\n", n + 5);
	out_append(c, hdr, 5);
	out_append(c, json, n);
	out_append(c, "\r\n", 2);
	c->next_keepalive = now_ms() + c->keepalive_ms;
}

static void
stream_json(struct conn *c, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (s)
		stream_msg(c, 0, s, strlen(s));
	free(s);
}

static void
stream_end(struct conn *c, const char *trailer_json)
{
	if (c->dead || c->state != C_STREAM)
		return;
	stream_msg(c, ENVD_ENVELOPE_END, trailer_json, strlen(trailer_json));
	out_append(c, "0\r\n\r\n", 5);
	c->stream = ST_NONE;
	c->proc = NULL;
	c->watch = NULL;
	c->state = C_WRITE;
	if (conn_flush(c))
		conn_after_flush(c);
}

/* ---- users and paths ---- */

/* /etc/passwd of the sandbox, read directly (a static binary has no NSS). */
static int
user_lookup(const char *name, struct user *u)
{
	FILE *f = fopen("/etc/passwd", "re");
	char line[1024];
	int r = -ENOENT;
	while (f && fgets(line, sizeof line, f)) {
		char *fields[7] = {0}, *f0 = line;
		int n = 0;
		line[strcspn(line, "\n")] = 0;
		while (n < 7) {
			fields[n++] = f0;
			char *colon = strchr(f0, ':');
			if (!colon)
				break;
			*colon = 0;
			f0 = colon + 1;
		}
		if (n < 6 || strcmp(fields[0], name))
			continue;
		snprintf(u->name, sizeof u->name, "%s", name);
		u->uid = (uid_t)strtoul(fields[2], NULL, 10);
		u->gid = (gid_t)strtoul(fields[3], NULL, 10);
		snprintf(u->home, sizeof u->home, "%s", fields[5][0] ? fields[5] : "/");
		r = 0;
		break;
	}
	if (f)
		fclose(f);
	if (r < 0 && !strcmp(name, "root")) {
		*u = (struct user){.name = "root", .home = "/root"};
		r = 0;
	}
	return r;
}

/* The request's user: Authorization: Basic base64("<user>:"), the SDK's way; else ?username=;
 * else /init's defaultUser, falling back to root when the template has no such user. */
static int
conn_user(struct conn *c, const char *explicit_name, struct user *u)
{
	const char *name = explicit_name && explicit_name[0] ? explicit_name
			   : c->auth_user[0]		     ? c->auth_user
							     : NULL;
	if (name)
		return user_lookup(name, u);
	if (user_lookup(default_user, u) == 0)
		return 0;
	return user_lookup("root", u);
}

static int
resolve_path(const struct user *u, const char *path, char *out, size_t size)
{
	int n;
	if (!path[0])
		n = snprintf(out, size, "%s", default_workdir[0] ? default_workdir : u->home);
	else if (path[0] == '/')
		n = snprintf(out, size, "%s", path);
	else if (path[0] == '~' && (path[1] == '/' || !path[1]))
		n = snprintf(out, size, "%s%s", u->home, path + 1);
	else
		n = snprintf(out, size, "%s/%s", u->home, path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int
mkdir_parents(const char *path, const struct user *u, bool self)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", path);
	size_t len = strlen(p);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		if (p[i] == 0 && !self)
			break;
		char save = p[i];
		p[i] = 0;
		if (mkdir(p, 0755) == 0) {
			if (lchown(p, u->uid, u->gid) < 0) {
				/* the directory exists; its owner stays root */
			}
		} else if (errno != EEXIST) {
			return -errno;
		}
		p[i] = save;
	}
	return 0;
}

static int
rm_tree_at(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth > 256)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			int k = rm_tree_at(fd, e->d_name, depth + 1);
			if (k < 0 && !r)
				r = k;
		}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && !r)
		r = -errno;
	return r;
}

static void
perm_string(mode_t m, char out[11])
{
	out[0] = S_ISDIR(m)    ? 'd'
		 : S_ISLNK(m)  ? 'L'
		 : S_ISFIFO(m) ? 'p'
		 : S_ISSOCK(m) ? 'S'
		 : S_ISCHR(m)  ? 'c'
		 : S_ISBLK(m)  ? 'D'
			       : '-';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (m & (1 << (8 - i))) ? rwx[i] : '-';
	out[10] = 0;
}

static void
id_name(const char *file, unsigned id, char *out, size_t size)
{
	snprintf(out, size, "%u", id);
	FILE *f = fopen(file, "re");
	char line[1024];
	while (f && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || strtoul(c2 + 1, NULL, 10) != id || c2[1] < '0' || c2[1] > '9')
			continue;
		*c1 = 0;
		size_t n = strnlen(line, size - 1); /* a longer name is cut, as before */
		memcpy(out, line, n);
		out[n] = 0;
		break;
	}
	if (f)
		fclose(f);
}

/* filesystem.EntryInfo of path (lstat; a symlink's type is its target's) */
static json_t *
entry_info(const char *path, int *err)
{
	struct stat st, tst;
	if (lstat(path, &st) < 0) {
		*err = -errno;
		return NULL;
	}
	const char *slash = strrchr(path, '/');
	const char *name = slash && slash[1] ? slash + 1 : path;
	const char *type = "FILE_TYPE_UNSPECIFIED";
	const struct stat *ts = &st;
	if (S_ISLNK(st.st_mode))
		ts = stat(path, &tst) == 0 ? &tst : NULL;
	if (ts && S_ISDIR(ts->st_mode))
		type = "FILE_TYPE_DIRECTORY";
	else if (ts && S_ISREG(ts->st_mode))
		type = "FILE_TYPE_FILE";
	char perms[11], owner[64], group[64], mtime[64], size[32];
	perm_string(st.st_mode, perms);
	id_name("/etc/passwd", st.st_uid, owner, sizeof owner);
	id_name("/etc/group", st.st_gid, group, sizeof group);
	struct tm tm;
	gmtime_r(&st.st_mtim.tv_sec, &tm);
	size_t k = strftime(mtime, sizeof mtime, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(mtime + k, sizeof mtime - k, ".%09ldZ", st.st_mtim.tv_nsec);
	snprintf(size, sizeof size, "%lld", (long long)st.st_size);
	json_t *e = json_pack("{s:o,s:s,s:o,s:s,s:I,s:s,s:o,s:o,s:s}", "name", jstr(name), "type",
			      type, "path", jstr(path), "size", size, "mode",
			      (json_int_t)(st.st_mode & 07777), "permissions", perms, "owner",
			      jstr(owner), "group", jstr(group), "modifiedTime", mtime);
	if (e && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n >= 0) {
			target[n] = 0;
			json_object_set_new(e, "symlinkTarget", jstr(target));
		}
	}
	return e;
}

static int
list_dir(const char *dir, uint32_t depth, json_t *arr)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (json_array_size(arr) >= MAX_LIST_ENTRIES) {
			r = -E2BIG;
			break;
		}
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
			     e->d_name) >= (int)sizeof p)
			continue;
		int err = 0;
		json_t *info = entry_info(p, &err);
		if (!info)
			continue;
		json_array_append_new(arr, info);
		struct stat st;
		if (depth > 1 && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			r = list_dir(p, depth - 1, arr);
			if (r == -E2BIG)
				break;
			r = 0;
		}
	}
	closedir(d);
	return r;
}

/* ---- processes ---- */

static struct proc *
proc_find(const struct envd_selector *s)
{
	for (struct proc *p = procs; p; p = p->next)
		if ((s->has_pid && p->pid == (pid_t)s->pid) ||
		    (s->has_tag && p->tag && !strcmp(p->tag, s->tag)))
			return p;
	return NULL;
}

static void
proc_event(struct proc *p, json_t *event)
{
	json_t *msg = json_pack("{s:o}", "event", event);
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		return;
	for (int i = 0; i < MAX_SUBS; i++) {
		struct conn *c = p->subs[i];
		if (!c || c->dead)
			continue;
		stream_msg(c, 0, s, strlen(s));
		conn_flush(c);
	}
	free(s);
}

static bool
proc_subs_full(struct proc *p)
{
	bool any = false;
	for (int i = 0; i < MAX_SUBS; i++) {
		struct conn *c = p->subs[i];
		if (!c || c->dead)
			continue;
		any = true;
		if (out_pending(c) < OUT_HIGH)
			return false;
	}
	return any;
}

static void
proc_resume(struct proc *p)
{
	if (!p->paused)
		return;
	p->paused = false;
	if (p->out.h.fd >= 0)
		ep_set(&p->out.h, EPOLLIN, EPOLL_CTL_MOD);
	if (p->err.h.fd >= 0)
		ep_set(&p->err.h, EPOLLIN, EPOLL_CTL_MOD);
}

static void
pipe_close(struct pipe_h *ph)
{
	if (ph->h.fd < 0)
		return;
	epoll_ctl(epfd, EPOLL_CTL_DEL, ph->h.fd, NULL);
	close(ph->h.fd);
	ph->h.fd = -1;
}

/* Read what one of the process's outputs holds (at most max bytes) and send it. */
static void
pipe_drain(struct pipe_h *ph, size_t max)
{
	static uint8_t buf[READ_CHUNK];
	static char enc[READ_CHUNK / 3 * 4 + 8];
	size_t done = 0;
	while (ph->h.fd >= 0 && done < max) {
		ssize_t k = read(ph->h.fd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0) { /* end, or EIO from a PTY whose other side closed */
			pipe_close(ph);
			return;
		}
		done += (size_t)k;
		base64_encode(buf, (size_t)k, enc);
		proc_event(ph->p, json_pack("{s:{s:s}}", "data", ph->field, enc));
	}
}

static void
pipe_cb(struct handler *h, uint32_t events)
{
	struct pipe_h *ph = (struct pipe_h *)h;
	struct proc *p = ph->p;
	if (proc_subs_full(p)) {
		/* the slowest client sets the pace: stop reading until it drains */
		p->paused = true;
		if (p->out.h.fd >= 0)
			ep_set(&p->out.h, 0, EPOLL_CTL_MOD);
		if (p->err.h.fd >= 0)
			ep_set(&p->err.h, 0, EPOLL_CTL_MOD);
		return;
	}
	pipe_drain(ph, READ_CHUNK * 4);
}

static bool
proc_subscribe(struct proc *p, struct conn *c)
{
	for (int i = 0; i < MAX_SUBS; i++)
		if (!p->subs[i] || p->subs[i]->dead) {
			p->subs[i] = c;
			c->proc = p;
			return true;
		}
	return false;
}

static void
proc_unsubscribe(struct proc *p, struct conn *c)
{
	for (int i = 0; i < MAX_SUBS; i++)
		if (p->subs[i] == c)
			p->subs[i] = NULL;
	if (p->paused && !proc_subs_full(p))
		proc_resume(p);
}

static void
proc_free(struct proc *p)
{
	pipe_close(&p->out);
	pipe_close(&p->err);
	if (p->in_fd >= 0)
		close(p->in_fd);
	for (struct proc **pp = &procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	n_procs--;
	free(p->tag);
	json_decref(p->config);
	free(p);
}

bool
envd_child_exited(pid_t pid, int status)
{
	struct proc *p = procs;
	while (p && p->pid != pid)
		p = p->next;
	if (!p)
		return false;
	/* the process is gone: what it wrote is in the pipes now; send it all before the end,
	 * whatever the clients' pace (a pipe holds little) */
	pipe_drain(&p->out, 16u << 20);
	pipe_drain(&p->err, 16u << 20);
	json_t *end;
	char st[64];
	if (WIFEXITED(status)) {
		snprintf(st, sizeof st, "exit status %d", WEXITSTATUS(status));
		end = json_pack("{s:i,s:b,s:s}", "exitCode", WEXITSTATUS(status), "exited", 1,
				"status", st);
	} else {
		const char *sig = strsignal(WTERMSIG(status));
		snprintf(st, sizeof st, "signal: %s", sig ? sig : "unknown");
		st[8] = (char)(st[8] >= 'A' && st[8] <= 'Z' ? st[8] + 32 : st[8]);
		end = json_pack("{s:i,s:b,s:s}", "exitCode", -1, "exited", 0, "status", st);
	}
	proc_event(p, json_pack("{s:o}", "end", end));
	for (int i = 0; i < MAX_SUBS; i++) {
		struct conn *c = p->subs[i];
		p->subs[i] = NULL;
		if (c && !c->dead) {
			c->proc = NULL;
			stream_end(c, "{}");
		}
	}
	proc_free(p);
	return true;
}

static void
setenv_vec(char ***env, size_t *n, const char *k, const char *v)
{
	size_t kl = strlen(k);
	char *s = malloc(kl + strlen(v) + 2);
	if (!s)
		return;
	sprintf(s, "%s=%s", k, v);
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*env)[i], k, kl) && (*env)[i][kl] == '=') {
			(*env)[i] = s;
			return;
		}
	char **e = realloc(*env, (*n + 2) * sizeof **env);
	if (!e) {
		free(s);
		return;
	}
	*env = e;
	e[(*n)++] = s;
	e[*n] = NULL;
}

/* The child's side of Start: runs between fork and exec; reports a failure on the status
 * pipe as an errno. */
static void __attribute__((noreturn))
child_exec(const struct envd_request *q, const struct user *u, const char *cwd, char **env, int in,
	   int out, int err, const char *pts, int status_fd)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < 32; s++)
		signal(s, SIG_DFL);
	setsid();
	if (pts) {
		int t = open(pts, O_RDWR);
		if (t < 0)
			goto fail;
		ioctl(t, TIOCSCTTY, 0);
		struct winsize ws = {.ws_row = (unsigned short)q->rows,
				     .ws_col = (unsigned short)q->cols};
		ioctl(t, TIOCSWINSZ, &ws);
		in = out = err = t;
	}
	if (pts && in > 2) {
		/* closed below, after the dup2s */
	}
	if (status_fd <= 2) {
		int s = fcntl(status_fd, F_DUPFD_CLOEXEC, 3);
		if (s >= 0)
			status_fd = s;
	}
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (pts && in > 2)
		close(in);
	if (chdir(cwd) < 0)
		goto fail;
	if (u->uid != 0 || u->gid != 0) {
		if (setgroups(0, NULL) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0)
			goto fail;
	}
	char **argv = calloc(q->n_args + 2, sizeof *argv);
	if (!argv)
		goto fail;
	argv[0] = q->cmd;
	for (size_t i = 0; i < q->n_args; i++)
		argv[i + 1] = q->args[i];
	execvpe(q->cmd, argv, env);
fail:;
	int e = errno;
	if (write(status_fd, &e, sizeof e) < 0)
		_exit(126);
	_exit(127);
}

static int
nonblock(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void
proc_start(struct conn *c, struct envd_request *q)
{
	if (n_procs >= MAX_PROCS) {
		rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "%u processes run already", MAX_PROCS);
		return;
	}
	if (q->tag) {
		struct envd_selector s = {.has_tag = true, .tag = q->tag};
		if (proc_find(&s)) {
			rpc_error(c, ENVD_ALREADY_EXISTS, "a process with tag %s runs", q->tag);
			return;
		}
	}
	struct user u;
	if (conn_user(c, NULL, &u) < 0) {
		rpc_error(c, ENVD_UNAUTHENTICATED, "no such user in the sandbox");
		return;
	}
	char cwd[PATH_MAX];
	if (resolve_path(&u, q->cwd ? q->cwd : "", cwd, sizeof cwd) < 0) {
		rpc_error(c, ENVD_INVALID_ARGUMENT, "cwd too long");
		return;
	}
	struct stat st;
	if (!q->cwd && stat(cwd, &st) < 0)
		snprintf(cwd, sizeof cwd, "/"); /* a user without a home directory */
	if (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		rpc_error(c, ENVD_INVALID_ARGUMENT, "cwd %s is not a directory", cwd);
		return;
	}
	/* environment: the template's, then /init's, then the user's, then the request's */
	char **env = NULL;
	size_t n_env = 0;
	env = calloc(1, sizeof *env);
	if (!env) {
		rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	for (char **e = base_env; e && *e; e++) {
		char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char k[256];
		snprintf(k, sizeof k, "%.*s", (int)(eq - *e), *e);
		setenv_vec(&env, &n_env, k, eq + 1);
	}
	bool has_path = false;
	for (size_t i = 0; i < n_env; i++)
		has_path = has_path || !strncmp(env[i], "PATH=", 5);
	if (!has_path)
		setenv_vec(&env, &n_env, "PATH",
			   "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	const char *k;
	json_t *v;
	json_object_foreach(init_envs, k, v) setenv_vec(&env, &n_env, k, json_string_value(v));
	setenv_vec(&env, &n_env, "HOME", u.home);
	setenv_vec(&env, &n_env, "USER", u.name);
	setenv_vec(&env, &n_env, "LOGNAME", u.name);
	setenv_vec(&env, &n_env, "PWD", cwd);
	if (q->has_pty)
		setenv_vec(&env, &n_env, "TERM", "xterm-256color");
	for (size_t i = 0; i < q->n_envs; i++)
		setenv_vec(&env, &n_env, q->env_keys[i], q->env_values[i]);

	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
	int master = -1;
	char pts[128] = "";
	int r = 0;
	if (pipe2(status, O_CLOEXEC) < 0)
		r = -errno;
	if (!r && q->has_pty) {
		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    ptsname_r(master, pts, sizeof pts) != 0)
			r = -errno ? -errno : -EIO;
	} else if (!r) {
		bool want_stdin = q->stdin_mode != 0;
		if ((want_stdin && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
		    pipe2(err, O_CLOEXEC) < 0)
			r = -errno;
		if (!want_stdin)
			in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pid_t pid = -1;
	if (!r) {
		pid = fork();
		if (pid == 0)
			child_exec(q, &u, cwd, env, in[0], out[1], err[1], q->has_pty ? pts : NULL,
				   status[1]);
		if (pid < 0)
			r = -errno;
	}
	for (size_t i = 0; i < n_env; i++)
		free(env[i]);
	free(env);
	if (status[1] >= 0)
		close(status[1]);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	int child_errno = 0;
	if (!r && read(status[0], &child_errno, sizeof child_errno) == sizeof child_errno) {
		r = -child_errno;
		/* the child exits 127 at once; it is reaped by the main loop, unknown to us */
	}
	if (status[0] >= 0)
		close(status[0]);
	if (r < 0) {
		if (master >= 0)
			close(master);
		if (in[1] >= 0)
			close(in[1]);
		if (out[0] >= 0)
			close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		rpc_error(c, r == -ENOENT ? ENVD_NOT_FOUND : ENVD_INTERNAL, "cannot start %s: %s",
			  q->cmd, strerror(-r));
		return;
	}
	struct proc *p = calloc(1, sizeof *p);
	if (!p) {
		kill(pid, SIGKILL); /* reaped by the main loop, unknown to us */
		int fds[] = {master, in[1], out[0], err[0]};
		for (size_t i = 0; i < 4; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "cannot start %s: out of memory", q->cmd);
		return;
	}
	p->pid = pid;
	p->tag = q->tag ? strdup(q->tag) : NULL;
	p->pty = q->has_pty;
	p->out = (struct pipe_h){
		{q->has_pty ? master : out[0], pipe_cb}, p, q->has_pty ? "pty" : "stdout"};
	p->err = (struct pipe_h){{q->has_pty ? -1 : err[0], pipe_cb}, p, "stderr"};
	p->in_fd = q->has_pty ? fcntl(master, F_DUPFD_CLOEXEC, 3) : in[1];
	json_t *args = json_array(), *envs = json_object();
	for (size_t i = 0; i < q->n_args; i++)
		json_array_append_new(args, jstr(q->args[i]));
	for (size_t i = 0; i < q->n_envs; i++)
		json_object_set_new(envs, q->env_keys[i], jstr(q->env_values[i]));
	p->config = json_pack("{s:o,s:o,s:o}", "cmd", jstr(q->cmd), "args", args, "envs", envs);
	if (q->cwd)
		json_object_set_new(p->config, "cwd", jstr(q->cwd));
	for (struct pipe_h *ph = &p->out; ph <= &p->err; ph++)
		if (ph->h.fd >= 0) {
			nonblock(ph->h.fd);
			ep_set(&ph->h, EPOLLIN, EPOLL_CTL_ADD);
		}
	p->next = procs;
	procs = p;
	n_procs++;
	stream_begin(c, ST_PROC);
	proc_subscribe(p, c);
	json_t *start = json_pack("{s:{s:I}}", "start", "pid", (json_int_t)pid);
	proc_event(p, start);
}

/* stdin bytes to a process; a process that does not read gets 5 s, then the call fails */
static int
proc_write_input(struct proc *p, const uint8_t *buf, size_t n)
{
	if (p->in_fd < 0)
		return -EPIPE;
	uint64_t deadline = now_ms() + 5000;
	while (n > 0) {
		ssize_t k = write(p->in_fd, buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pfd = {p->in_fd, POLLOUT, 0};
			if (now_ms() >= deadline)
				return -ETIMEDOUT;
			poll(&pfd, 1, 100);
			continue;
		}
		if (k < 0)
			return -errno;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* ---- watchers ---- */

static const char *
event_type(uint32_t m)
{
	if (m & (IN_CREATE | IN_MOVED_TO))
		return "EVENT_TYPE_CREATE";
	if (m & (IN_DELETE | IN_DELETE_SELF))
		return "EVENT_TYPE_REMOVE";
	if (m & IN_MOVED_FROM)
		return "EVENT_TYPE_RENAME";
	if (m & IN_MODIFY)
		return "EVENT_TYPE_WRITE";
	if (m & IN_ATTRIB)
		return "EVENT_TYPE_CHMOD";
	return NULL;
}

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_MODIFY | IN_ATTRIB)

static int
watcher_add(struct watcher *w, const char *abs, const char *rel, int depth)
{
	if (w->n_wds >= MAX_WATCHES)
		return -ENOSPC;
	int wd = inotify_add_watch(w->h.fd, abs, WATCH_MASK | IN_ONLYDIR);
	if (wd < 0)
		return -errno;
	void *n = realloc(w->wds, (w->n_wds + 1) * sizeof *w->wds);
	if (!n)
		return -ENOMEM;
	w->wds = n;
	w->wds[w->n_wds].wd = wd;
	w->wds[w->n_wds].rel = strdup(rel);
	if (!w->wds[w->n_wds].rel) {
		inotify_rm_watch(w->h.fd, wd);
		return -ENOMEM;
	}
	w->n_wds++;
	if (!w->recursive || depth > 64)
		return 0;
	DIR *d = opendir(abs);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char a[PATH_MAX], r[PATH_MAX];
		snprintf(a, sizeof a, "%s/%s", abs, e->d_name);
		snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		if (watcher_add(w, a, r, depth + 1) == -ENOSPC)
			break;
	}
	if (d)
		closedir(d);
	return 0;
}

static void
watcher_cb(struct handler *h, uint32_t events)
{
	struct watcher *w = (struct watcher *)h;
	if (w->dead)
		return;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t k = read(h->fd, buf, sizeof buf);
	for (ssize_t off = 0; k > 0 && off + (ssize_t)sizeof(struct inotify_event) <= k;) {
		struct inotify_event *ev = (struct inotify_event *)(buf + off);
		off += (ssize_t)sizeof *ev + ev->len;
		if (ev->mask & IN_Q_OVERFLOW) {
			w->overflowed = true;
			continue;
		}
		const char *type = event_type(ev->mask);
		const char *rel = NULL;
		for (size_t i = 0; i < w->n_wds; i++)
			if (w->wds[i].wd == ev->wd)
				rel = w->wds[i].rel;
		if (!type || !rel || !ev->len)
			continue;
		char name[PATH_MAX];
		snprintf(name, sizeof name, "%s%s%s", rel, rel[0] ? "/" : "", ev->name);
		if (w->recursive && (ev->mask & IN_ISDIR) &&
		    (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
			/* follow the new directory too */
			char abs[PATH_MAX * 2];
			snprintf(abs, sizeof abs, "%s/%s", w->root, name);
			if (strlen(abs) < PATH_MAX)
				watcher_add(w, abs, name, 1);
		}
		json_t *fe = json_pack("{s:o,s:s}", "name", jstr(name), "type", type);
		if (w->sub) {
			if (out_pending(w->sub) < OUT_HIGH) {
				stream_json(w->sub, json_pack("{s:o}", "filesystem", fe));
				conn_flush(w->sub);
			} else
				json_decref(fe); /* a client that does not read loses events */
		} else if (json_array_size(w->queue) < MAX_QUEUED_EVENTS)
			json_array_append_new(w->queue, fe);
		else {
			json_decref(fe);
			w->overflowed = true;
		}
	}
}

/* Stop a watcher; its memory goes at the end of the round (an event may still name it). */
static void
watcher_free(struct watcher *w)
{
	if (w->dead)
		return;
	w->dead = true;
	n_watchers--;
	if (w->h.fd >= 0) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, w->h.fd, NULL);
		close(w->h.fd);
	}
	w->h.fd = -1;
	if (w->sub)
		w->sub->watch = NULL;
	w->sub = NULL;
}

static void
watcher_release(struct watcher *w)
{
	for (size_t i = 0; i < w->n_wds; i++)
		free(w->wds[i].rel);
	free(w->wds);
	json_decref(w->queue);
	free(w);
}

static struct watcher *
watcher_new(struct conn *c, const char *path, bool recursive)
{
	if (n_watchers >= MAX_WATCHERS) {
		rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "%u watchers exist already", MAX_WATCHERS);
		return NULL;
	}
	struct user u;
	char abs[PATH_MAX];
	struct stat st;
	if (conn_user(c, NULL, &u) < 0 || resolve_path(&u, path, abs, sizeof abs) < 0) {
		rpc_error(c, ENVD_INVALID_ARGUMENT, "bad user or path");
		return NULL;
	}
	if (stat(abs, &st) < 0) {
		rpc_error(c, envd_code_from_errno(errno), "%s: %s", abs, strerror(errno));
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		rpc_error(c, ENVD_INVALID_ARGUMENT, "%s is not a directory", abs);
		return NULL;
	}
	struct watcher *w = calloc(1, sizeof *w);
	if (!w) {
		rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "out of memory");
		return NULL;
	}
	w->h = (struct handler){inotify_init1(IN_NONBLOCK | IN_CLOEXEC), watcher_cb};
	w->recursive = recursive;
	snprintf(w->root, sizeof w->root, "%s", abs);
	w->queue = json_array();
	uint8_t rnd[16];
	int rf = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (rf < 0 || read(rf, rnd, sizeof rnd) != sizeof rnd)
		for (int i = 0; i < 16; i++)
			rnd[i] = (uint8_t)(now_ms() >> (i % 8) ^ (uint64_t)(uintptr_t)w >> i);
	if (rf >= 0)
		close(rf);
	for (int i = 0; i < 16; i++)
		snprintf(w->id + 2 * i, 3, "%02x", rnd[i]);
	w->next = watchers;
	watchers = w;
	n_watchers++;
	int r = w->h.fd < 0 ? -errno : watcher_add(w, abs, "", 0);
	if (r < 0) {
		rpc_error(c, envd_code_from_errno(r), "cannot watch %s: %s", abs, strerror(-r));
		watcher_free(w);
		return NULL;
	}
	ep_set(&w->h, EPOLLIN, EPOLL_CTL_ADD);
	return w;
}

static struct watcher *
watcher_find(const char *id)
{
	for (struct watcher *w = watchers; w; w = w->next)
		if (!w->dead && !w->sub && !strcmp(w->id, id))
			return w;
	return NULL;
}

/* ---- request handlers ---- */

static void
handle_rpc(struct conn *c, const char *json, size_t len)
{
	struct envd_request q;
	char why[256];
	enum envd_code code = envd_request_decode(c->route, json, len, &q, why, sizeof why);
	if (code) {
		envd_request_free(&q);
		rpc_error(c, code, "%s", why);
		return;
	}
	struct user u;
	char path[PATH_MAX], dest[PATH_MAX];
	int r, err = 0;
	json_t *e;
	struct proc *p;
	switch (c->route) {
	case ENVD_R_P_START:
		proc_start(c, &q);
		break;
	case ENVD_R_P_CONNECT:
		p = proc_find(&q.sel);
		if (!p) {
			rpc_error(c, ENVD_NOT_FOUND, "no such process");
			break;
		}
		if (!proc_subscribe(p, c)) {
			rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "%d streams follow it already",
				  MAX_SUBS);
			break;
		}
		stream_begin(c, ST_PROC);
		stream_json(
			c, json_pack("{s:{s:{s:I}}}", "event", "start", "pid", (json_int_t)p->pid));
		conn_flush(c);
		break;
	case ENVD_R_P_LIST: {
		json_t *arr = json_array();
		for (p = procs; p; p = p->next) {
			json_t *pi = json_pack("{s:O,s:I}", "config", p->config, "pid",
					       (json_int_t)p->pid);
			if (p->tag)
				json_object_set_new(pi, "tag", jstr(p->tag));
			json_array_append_new(arr, pi);
		}
		respond_json(c, 200, json_pack("{s:o}", "processes", arr));
		break;
	}
	case ENVD_R_P_UPDATE:
		p = proc_find(&q.sel);
		if (!p)
			rpc_error(c, ENVD_NOT_FOUND, "no such process");
		else if (!q.has_pty || !p->pty)
			rpc_error(c, ENVD_FAILED_PRECONDITION, "only a PTY can be resized");
		else {
			struct winsize ws = {.ws_row = (unsigned short)q.rows,
					     .ws_col = (unsigned short)q.cols};
			if (ioctl(p->in_fd, TIOCSWINSZ, &ws) < 0)
				rpc_error(c, ENVD_INTERNAL, "resize: %s", strerror(errno));
			else
				respond(c, 200, "application/json", "{}", 2);
		}
		break;
	case ENVD_R_P_SEND_INPUT:
		p = proc_find(&q.sel);
		if (!p)
			rpc_error(c, ENVD_NOT_FOUND, "no such process");
		else if (q.input_pty != p->pty)
			rpc_error(c, ENVD_FAILED_PRECONDITION, "the process %s a PTY",
				  p->pty ? "has" : "has no");
		else if ((r = proc_write_input(p, q.input, q.input_len)) < 0)
			rpc_error(c, r == -EPIPE ? ENVD_FAILED_PRECONDITION : ENVD_INTERNAL,
				  "stdin: %s", r == -EPIPE ? "closed" : strerror(-r));
		else
			respond(c, 200, "application/json", "{}", 2);
		break;
	case ENVD_R_P_CLOSE_STDIN:
		p = proc_find(&q.sel);
		if (!p)
			rpc_error(c, ENVD_NOT_FOUND, "no such process");
		else if (p->pty)
			rpc_error(c, ENVD_FAILED_PRECONDITION, "a PTY has no stdin to close");
		else {
			if (p->in_fd >= 0)
				close(p->in_fd);
			p->in_fd = -1;
			respond(c, 200, "application/json", "{}", 2);
		}
		break;
	case ENVD_R_P_SEND_SIGNAL:
		p = proc_find(&q.sel);
		if (!p)
			rpc_error(c, ENVD_NOT_FOUND, "no such process");
		else {
			/* its whole session: a shell's children go too */
			kill(-p->pid, q.signal);
			kill(p->pid, q.signal);
			respond(c, 200, "application/json", "{}", 2);
		}
		break;
	case ENVD_R_P_STREAM_INPUT:
		break; /* handled by handle_stream_input */
	case ENVD_R_F_STAT:
	case ENVD_R_F_MAKE_DIR:
	case ENVD_R_F_MOVE:
	case ENVD_R_F_LIST_DIR:
	case ENVD_R_F_REMOVE:
		if (conn_user(c, NULL, &u) < 0) {
			rpc_error(c, ENVD_UNAUTHENTICATED, "no such user in the sandbox");
			break;
		}
		if (resolve_path(&u, q.path, path, sizeof path) < 0 ||
		    (q.destination && resolve_path(&u, q.destination, dest, sizeof dest) < 0)) {
			rpc_error(c, ENVD_INVALID_ARGUMENT, "path too long");
			break;
		}
		if (c->route == ENVD_R_F_STAT) {
			e = entry_info(path, &err);
			if (!e)
				rpc_error(c, envd_code_from_errno(err), "%s: %s", path,
					  strerror(-err));
			else
				respond_json(c, 200, json_pack("{s:o}", "entry", e));
		} else if (c->route == ENVD_R_F_MAKE_DIR) {
			struct stat st;
			if (lstat(path, &st) == 0) {
				rpc_error(c, ENVD_ALREADY_EXISTS, "%s exists", path);
				break;
			}
			r = mkdir_parents(path, &u, true);
			e = r < 0 ? NULL : entry_info(path, &err);
			if (!e)
				rpc_error(c, envd_code_from_errno(r ? r : err), "%s: %s", path,
					  strerror(r ? -r : -err));
			else
				respond_json(c, 200, json_pack("{s:o}", "entry", e));
		} else if (c->route == ENVD_R_F_MOVE) {
			r = mkdir_parents(dest, &u, false);
			if (r == 0 && rename(path, dest) < 0)
				r = -errno;
			e = r < 0 ? NULL : entry_info(dest, &err);
			if (!e)
				rpc_error(c, envd_code_from_errno(r ? r : err), "move %s: %s", path,
					  strerror(r ? -r : -err));
			else
				respond_json(c, 200, json_pack("{s:o}", "entry", e));
		} else if (c->route == ENVD_R_F_LIST_DIR) {
			struct stat st;
			if (stat(path, &st) < 0) {
				rpc_error(c, envd_code_from_errno(errno), "%s: %s", path,
					  strerror(errno));
				break;
			}
			if (!S_ISDIR(st.st_mode)) {
				rpc_error(c, ENVD_INVALID_ARGUMENT, "%s is not a directory", path);
				break;
			}
			json_t *arr = json_array();
			r = list_dir(path, q.depth ? q.depth : 1, arr);
			if (r < 0) {
				json_decref(arr);
				rpc_error(c,
					  r == -E2BIG ? ENVD_RESOURCE_EXHAUSTED
						      : envd_code_from_errno(r),
					  "list %s: %s", path,
					  r == -E2BIG ? "too many entries" : strerror(-r));
			} else
				respond_json(c, 200, json_pack("{s:o}", "entries", arr));
		} else {
			r = rm_tree_at(AT_FDCWD, path, 0);
			if (r < 0)
				rpc_error(c, envd_code_from_errno(r), "remove %s: %s", path,
					  strerror(-r));
			else
				respond(c, 200, "application/json", "{}", 2);
		}
		break;
	case ENVD_R_F_WATCH_DIR: {
		struct watcher *w = watcher_new(c, q.path, q.recursive);
		if (!w)
			break;
		w->sub = c;
		c->watch = w;
		stream_begin(c, ST_WATCH);
		stream_json(c, json_pack("{s:{}}", "start"));
		conn_flush(c);
		break;
	}
	case ENVD_R_F_CREATE_WATCHER: {
		struct watcher *w = watcher_new(c, q.path, q.recursive);
		if (w)
			respond_json(c, 200, json_pack("{s:s}", "watcherId", w->id));
		break;
	}
	case ENVD_R_F_GET_WATCHER_EVENTS: {
		struct watcher *w = watcher_find(q.watcher_id);
		if (!w) {
			rpc_error(c, ENVD_NOT_FOUND, "no such watcher");
			break;
		}
		json_t *events = w->queue;
		w->queue = json_array();
		respond_json(c, 200, json_pack("{s:o}", "events", events));
		break;
	}
	case ENVD_R_F_REMOVE_WATCHER: {
		struct watcher *w = watcher_find(q.watcher_id);
		if (!w)
			rpc_error(c, ENVD_NOT_FOUND, "no such watcher");
		else {
			watcher_free(w);
			respond(c, 200, "application/json", "{}", 2);
		}
		break;
	}
	default:
		rpc_error(c, ENVD_UNIMPLEMENTED, "not implemented");
	}
	envd_request_free(&q);
}

/* StreamInput: the client's envelopes, in order (HTTP/1.1 is half-duplex: they all came before
 * the answer). The first names the process. */
static void
handle_stream_input(struct conn *c)
{
	struct proc *p = NULL;
	bool started = false;
	for (size_t off = 0; off < c->body_len;) {
		uint8_t flags;
		size_t n;
		ssize_t k = envd_envelope_parse((uint8_t *)c->body + off, c->body_len - off,
						ENVD_MAX_BODY, &flags, &n);
		if (k <= 0) {
			rpc_error(c, ENVD_INVALID_ARGUMENT, "truncated envelope");
			return;
		}
		if (flags & ENVD_ENVELOPE_END)
			break;
		if (flags & ENVD_ENVELOPE_COMPRESSED) {
			rpc_error(c, ENVD_UNIMPLEMENTED, "compressed messages are not accepted");
			return;
		}
		struct envd_request q;
		char why[256];
		enum envd_code code = envd_request_decode(ENVD_R_P_STREAM_INPUT, c->body + off + 5,
							  n, &q, why, sizeof why);
		off += (size_t)k;
		if (code) {
			envd_request_free(&q);
			rpc_error(c, code, "%s", why);
			return;
		}
		if (q.sel.has_pid || q.sel.has_tag) {
			p = proc_find(&q.sel);
			started = true;
		} else if (q.input) {
			int r = !started || !p ? -ESRCH : proc_write_input(p, q.input, q.input_len);
			if (r < 0) {
				envd_request_free(&q);
				rpc_error(c, r == -ESRCH ? ENVD_NOT_FOUND : ENVD_INTERNAL,
					  "stdin: %s",
					  r == -ESRCH ? "no such process" : strerror(-r));
				return;
			}
		}
		envd_request_free(&q);
	}
	stream_begin(c, ST_NONE);
	stream_msg(c, 0, "{}", 2);
	stream_end(c, "{}");
}

static void
handle_init(struct conn *c)
{
	struct envd_request q;
	char why[256];
	enum envd_code code =
		envd_request_decode(ENVD_R_INIT, c->body, c->body_len, &q, why, sizeof why);
	if (code) {
		envd_request_free(&q);
		respond_rest_error(c, 400, "%s", why);
		return;
	}
	if (q.n_envs) {
		for (size_t i = 0; i < q.n_envs; i++)
			json_object_set_new(init_envs, q.env_keys[i], jstr(q.env_values[i]));
	}
	if (q.has_access_token) {
		free(access_token);
		access_token = q.access_token[0] ? strdup(q.access_token) : NULL;
	}
	if (q.timestamp) {
		int64_t sec;
		long nsec;
		if (envd_parse_rfc3339(q.timestamp, &sec, &nsec) == 0) {
			struct timespec now, ts = {.tv_sec = (time_t)sec, .tv_nsec = nsec};
			clock_gettime(CLOCK_REALTIME, &now);
			/* a restored sandbox's clock stood still: set it when it is off by > 50 ms
			 */
			if (llabs((long long)(now.tv_sec - ts.tv_sec) * 1000 +
				  (now.tv_nsec - ts.tv_nsec) / 1000000) > 50)
				clock_settime(CLOCK_REALTIME, &ts);
		}
	}
	if (q.default_user && q.default_user[0] && strlen(q.default_user) < sizeof default_user)
		snprintf(default_user, sizeof default_user, "%s", q.default_user);
	if (q.default_workdir && q.default_workdir[0] == '/')
		snprintf(default_workdir, sizeof default_workdir, "%s", q.default_workdir);
	envd_request_free(&q);
	respond(c, 204, NULL, NULL, 0);
}

static void
handle_metrics(struct conn *c)
{
	static unsigned long long last_total, last_idle;
	unsigned long long v[10] = {0}, total = 0, idle;
	FILE *f = fopen("/proc/stat", "re");
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]) < 4) {
			/* left at zero */
		}
		fclose(f);
	}
	for (int i = 0; i < 8; i++)
		total += v[i];
	idle = v[3] + v[4];
	double pct =
		total > last_total
			? 100.0 * (1.0 - (double)(idle - last_idle) / (double)(total - last_total))
			: 0;
	last_total = total;
	last_idle = idle;
	struct sysinfo si;
	sysinfo(&si);
	unsigned long long mem_total = (unsigned long long)si.totalram * si.mem_unit;
	unsigned long long mem_free = (unsigned long long)(si.freeram + si.bufferram) * si.mem_unit;
	struct statvfs vfs;
	unsigned long long disk_total = 0, disk_used = 0;
	if (statvfs("/", &vfs) == 0) {
		disk_total = (unsigned long long)vfs.f_blocks * vfs.f_frsize;
		disk_used = disk_total - (unsigned long long)vfs.f_bfree * vfs.f_frsize;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	respond_json(c, 200,
		     json_pack("{s:I,s:I,s:f,s:I,s:I,s:I,s:I}", "ts", (json_int_t)now.tv_sec,
			       "cpu_count", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
			       "cpu_used_pct", pct < 0 ? 0.0 : pct, "mem_total",
			       (json_int_t)mem_total, "mem_used",
			       (json_int_t)(mem_total - mem_free), "disk_used",
			       (json_int_t)disk_used, "disk_total", (json_int_t)disk_total));
}

static void
handle_download(struct conn *c)
{
	char path[PATH_MAX], uname[64] = "", abs[PATH_MAX];
	int r = envd_query_get(c->query, c->query_len, "path", path, sizeof path);
	if (r < 0 || envd_query_get(c->query, c->query_len, "username", uname, sizeof uname) < 0) {
		respond_rest_error(c, 400, "bad query string");
		return;
	}
	if (r == 0)
		path[0] = 0;
	struct user u;
	if (conn_user(c, uname, &u) < 0) {
		respond_rest_error(c, 401, "no user %s in the sandbox", uname);
		return;
	}
	if (resolve_path(&u, path, abs, sizeof abs) < 0) {
		respond_rest_error(c, 400, "path too long");
		return;
	}
	int fd = open(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		respond_rest_error(c, e == ENOENT ? 404 : 400, "%s: %s", abs, strerror(e));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		respond_rest_error(c, 400, "%s is not a regular file", abs);
		return;
	}
	const char *name = strrchr(abs, '/');
	name = name ? name + 1 : abs;
	char safe[256];
	size_t o = 0;
	for (const char *p = name; *p && o + 1 < sizeof safe; p++)
		safe[o++] = (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
				    ? '_'
				    : *p;
	safe[o] = 0;
	out_printf(c,
		   "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
		   "Content-Disposition: attachment; filename=\"%s\"\r\n"
		   "Content-Length: %lld\r\n%s\r\n",
		   safe, (long long)st.st_size, c->keep_alive ? "" : "Connection: close\r\n");
	if (c->head_method || st.st_size == 0) {
		close(fd);
		c->state = C_WRITE;
		if (conn_flush(c))
			conn_after_flush(c);
		return;
	}
	c->dl_fd = fd;
	c->dl_left = (uint64_t)st.st_size;
	c->state = C_DOWNLOAD;
	conn_after_flush(c);
}

/* Fill the answer's queue from the file while the socket drains. */
static void
download_more(struct conn *c)
{
	static char buf[READ_CHUNK];
	while (c->dl_fd >= 0 && out_pending(c) < OUT_LOW && c->dl_left) {
		ssize_t k = read(c->dl_fd, buf,
				 c->dl_left < sizeof buf ? (size_t)c->dl_left : sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* the file shrank under us: the promised length cannot be kept */
			conn_close(c, true);
			return;
		}
		out_append(c, buf, (size_t)k);
		c->dl_left -= (uint64_t)k;
		if (!conn_flush(c))
			return;
	}
	if (c->dl_fd >= 0 && !c->dl_left) {
		close(c->dl_fd);
		c->dl_fd = -1;
		c->state = C_WRITE;
	}
}

/* ---- upload ---- */

static int
up_part_begin(struct envd_multipart *m, void *ud)
{
	struct conn *c = ud;
	if (c->up_err)
		return 0;
	char rel[PATH_MAX];
	if (!c->up_path_used && c->up_path[0]) {
		snprintf(rel, sizeof rel, "%s", c->up_path);
		c->up_path_used = true;
	} else if (m->filename[0]) {
		snprintf(rel, sizeof rel, "%s", m->filename);
	} else {
		c->up_err = EINVAL;
		return 0;
	}
	char abs[PATH_MAX];
	if (resolve_path(&c->user, rel, abs, sizeof abs) < 0) {
		c->up_err = ENAMETOOLONG;
		return 0;
	}
	int r = mkdir_parents(abs, &c->user, false);
	if (r < 0) {
		c->up_err = -r;
		return 0;
	}
	c->up_fd = open(abs, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c->up_fd < 0) {
		c->up_err = errno;
		return 0;
	}
	if (fchown(c->up_fd, c->user.uid, c->user.gid) < 0) {
		/* a file the user cannot own stays root's */
	}
	const char *slash = strrchr(abs, '/');
	json_array_append_new(c->up_entries,
			      json_pack("{s:o,s:s,s:o}", "name", jstr(slash ? slash + 1 : abs),
					"type", "file", "path", jstr(abs)));
	return 0;
}

static int
up_part_data(struct envd_multipart *m, const char *p, size_t n, void *ud)
{
	struct conn *c = ud;
	while (c->up_fd >= 0 && n > 0) {
		ssize_t k = write(c->up_fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* the sandbox's disk is full (or its quota reached): the rest is read and
			 * dropped, the answer says 507 */
			c->up_err = k < 0 ? errno : ENOSPC;
			close(c->up_fd);
			c->up_fd = -1;
			break;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
up_part_end(struct envd_multipart *m, void *ud)
{
	struct conn *c = ud;
	if (c->up_fd >= 0) {
		close(c->up_fd);
		c->up_fd = -1;
	}
	return 0;
}

static const struct envd_mp_sink up_sink = {up_part_begin, up_part_data, up_part_end};

static void
upload_finish(struct conn *c, bool framing_ok)
{
	if (c->up_fd >= 0) {
		close(c->up_fd);
		c->up_fd = -1;
	}
	if (!framing_ok || c->mp->state != MP_END) {
		c->keep_alive = false;
		respond_rest_error(c, 400, "malformed multipart body");
	} else if (c->up_err == ENOSPC || c->up_err == EDQUOT)
		respond_rest_error(c, 507, "not enough disk space");
	else if (c->up_err)
		respond_rest_error(c, c->up_err == EINVAL || c->up_err == ENAMETOOLONG ? 400 : 500,
				   "upload: %s", strerror(c->up_err));
	else {
		json_t *e = c->up_entries;
		c->up_entries = NULL;
		respond_json(c, 200, e);
	}
	json_decref(c->up_entries);
	c->up_entries = NULL;
	free(c->mp);
	c->mp = NULL;
	free(c->mpbuf);
	c->mpbuf = NULL;
}

static void
handle_upload_start(struct conn *c, const char *ct, size_t ct_len)
{
	char uname[64] = "";
	int r = envd_query_get(c->query, c->query_len, "path", c->up_path, sizeof c->up_path);
	if (r < 0 || envd_query_get(c->query, c->query_len, "username", uname, sizeof uname) < 0) {
		c->keep_alive = false;
		respond_rest_error(c, 400, "bad query string");
		return;
	}
	if (r == 0)
		c->up_path[0] = 0;
	if (conn_user(c, uname, &c->user) < 0) {
		c->keep_alive = false;
		respond_rest_error(c, 401, "no user %s in the sandbox", uname);
		return;
	}
	c->mp = malloc(sizeof *c->mp);
	c->mpbuf = malloc(MP_SIZE);
	if (!c->mp || !c->mpbuf || envd_multipart_init(c->mp, ct, ct_len) < 0) {
		free(c->mp);
		free(c->mpbuf);
		c->mp = NULL;
		c->mpbuf = NULL;
		c->keep_alive = false;
		respond_rest_error(c, 400, "expected multipart/form-data with a boundary");
		return;
	}
	c->mp_len = 0;
	c->up_fd = -1;
	c->up_err = 0;
	c->up_path_used = false;
	c->up_entries = json_array();
	c->state = C_UPLOAD;
}

/* ---- connections ---- */

static void
conn_free(struct conn *c)
{
	free(c->body);
	free(c->out);
	free(c->mp);
	free(c->mpbuf);
	json_decref(c->up_entries);
	free(c);
}

static void
conn_close(struct conn *c, bool rst)
{
	if (c->dead)
		return;
	c->dead = true;
	if (rst) {
		/* no TIME_WAIT left inside the sandbox (it would make a checkpoint fail) */
		struct linger l = {1, 0};
		setsockopt(c->h.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->h.fd, NULL);
	close(c->h.fd);
	c->h.fd = -1;
	if (c->proc)
		proc_unsubscribe(c->proc, c);
	c->proc = NULL;
	if (c->watch)
		watcher_free(c->watch); /* a WatchDir's watcher lives as long as its stream */
	if (c->dl_fd >= 0)
		close(c->dl_fd);
	c->dl_fd = -1;
	if (c->up_fd >= 0)
		close(c->up_fd);
	c->up_fd = -1;
	n_conns--;
}

/* The answer is queued: wait for it to go, then the next request or the close. */
static void
conn_after_flush(struct conn *c)
{
	if (c->dead)
		return;
	if (c->state == C_DOWNLOAD) {
		download_more(c);
		if (c->dead || c->state == C_DOWNLOAD)
			return;
	}
	if (c->state != C_WRITE || out_pending(c))
		return;
	free(c->body);
	c->body = NULL;
	c->body_len = c->body_cap = 0;
	c->enveloped = false;
	if (!c->keep_alive || !c->body_done) {
		/* wait for the client to close first, so the TIME_WAIT is its own; then RST */
		c->state = C_LINGER;
		c->deadline = now_ms() + LINGER_MS;
		c->stall_until = 0;
		return;
	}
	c->state = C_HEAD;
	c->deadline = now_ms() + IDLE_MS;
	c->stall_until = 0;
	if (c->in_len)
		conn_process(c);
}

/* Consume request body bytes from c->in into dst (room bytes at most). */
static int
body_take(struct conn *c, char *dst, size_t room, size_t *got)
{
	*got = 0;
	if (c->body_done)
		return 0;
	if (c->body_kind == HTTP_BODY_LENGTH) {
		size_t n = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
		if (n > room)
			n = room;
		memcpy(dst, c->in, n);
		memmove(c->in, c->in + n, c->in_len - n);
		c->in_len -= n;
		c->body_left -= n;
		*got = n;
		c->body_done = c->body_left == 0;
		return 0;
	}
	if (c->body_kind == HTTP_BODY_CHUNKED) {
		size_t n = c->in_len < room ? c->in_len : room;
		size_t data;
		bool done;
		ssize_t k = envd_chunked_decode(&c->chunk, c->in, n, &data, &done);
		if (k < 0)
			return -EBADMSG;
		memcpy(dst, c->in, data);
		memmove(c->in, c->in + k, c->in_len - (size_t)k);
		c->in_len -= (size_t)k;
		*got = data;
		c->body_done = done;
		return 0;
	}
	c->body_done = true;
	return 0;
}

static void
request_ready(struct conn *c)
{
	switch (c->route) {
	case ENVD_R_INIT:
		handle_init(c);
		break;
	case ENVD_R_P_STREAM_INPUT:
		handle_stream_input(c);
		break;
	default: {
		const char *msg = c->body;
		size_t len = c->body_len;
		if (c->enveloped) {
			uint8_t flags = 0;
			size_t n = 0;
			ssize_t k = envd_envelope_parse((uint8_t *)c->body, c->body_len,
							ENVD_MAX_BODY, &flags, &n);
			if (k <= 0 || (flags & ENVD_ENVELOPE_COMPRESSED)) {
				rpc_error(c, ENVD_INVALID_ARGUMENT,
					  "expected one uncompressed envelope");
				return;
			}
			msg = c->body + 5;
			len = n;
		}
		handle_rpc(c, msg ? msg : "", len);
	}
	}
}

/* More body bytes came: for uploads, into the file; otherwise into the body buffer. */
static void
conn_body(struct conn *c)
{
	if (c->state == C_UPLOAD) {
		for (;;) {
			size_t got;
			if (body_take(c, c->mpbuf + c->mp_len, MP_SIZE - c->mp_len, &got) < 0) {
				c->body_done = false;
				upload_finish(c, false);
				return;
			}
			c->mp_len += got;
			ssize_t k = envd_multipart_feed(c->mp, c->mpbuf, c->mp_len, c->body_done,
							&up_sink, c);
			if (k < 0) {
				/* the rest of a bad body is not read: the connection closes after
				 */
				c->body_done = false;
				upload_finish(c, false);
				return;
			}
			memmove(c->mpbuf, c->mpbuf + k, c->mp_len - (size_t)k);
			c->mp_len -= (size_t)k;
			if (c->body_done) {
				upload_finish(c, true);
				return;
			}
			if (!got)
				return;
			c->deadline = now_ms() + BODY_MS;
		}
	}
	size_t cap = ENVD_MAX_BODY + 5;
	if (!c->body) {
		c->body_cap = c->body_kind == HTTP_BODY_LENGTH && c->body_left < cap
				      ? (size_t)c->body_left + 1
				      : 65536;
		c->body = malloc(c->body_cap);
		if (!c->body) {
			conn_close(c, true);
			return;
		}
	}
	for (;;) {
		if (c->body_len == c->body_cap && c->body_cap < cap) {
			size_t nc = c->body_cap * 2 < cap ? c->body_cap * 2 : cap;
			char *b = realloc(c->body, nc);
			if (!b) {
				conn_close(c, true);
				return;
			}
			c->body = b;
			c->body_cap = nc;
		}
		size_t got;
		if (body_take(c, c->body + c->body_len, c->body_cap - c->body_len, &got) < 0) {
			c->keep_alive = false;
			c->body_done = false;
			rpc_error(c, ENVD_INVALID_ARGUMENT, "bad chunked body");
			return;
		}
		c->body_len += got;
		if (c->body_done)
			break;
		if (c->body_len >= cap) {
			c->keep_alive = false;
			c->body_done = false;
			rpc_error(c, ENVD_RESOURCE_EXHAUSTED, "request body over %u bytes",
				  ENVD_MAX_BODY);
			return;
		}
		if (!got)
			return;
	}
	c->deadline = 0;
	request_ready(c);
}

static const struct http_header *
header(const struct http_head *h, const char *name)
{
	for (size_t i = 0; i < h->n_headers; i++)
		if (http_header_is(&h->headers[i], name))
			return &h->headers[i];
	return NULL;
}

static bool
token_ok(struct conn *c)
{
	if (!access_token)
		return true;
	size_t n = strlen(access_token);
	if (!c->has_token || strlen(c->token) != n)
		return false;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(c->token[i] ^ access_token[i]);
	return d == 0;
}

static void
conn_head(struct conn *c)
{
	static struct http_head h;
	ssize_t k = http_parse_head(c->in, c->in_len, true, HTTP_MAX_HEAD, &h);
	if (k == 0) {
		if (c->in_len >= HTTP_MAX_HEAD) {
			c->keep_alive = false;
			c->body_done = false;
			respond_rest_error(c, 431, "request head too large");
		}
		return;
	}
	c->keep_alive = false;
	c->body_done = false;
	c->enveloped = false;
	c->head_method = false;
	if (k < 0) {
		respond_rest_error(c, k == -EBADMSG ? 400 : 431, "malformed request: %s",
				   h.error ? h.error : "too large");
		return;
	}
	c->keep_alive = h.keep_alive;
	c->head_method = h.method_len == 4 && !memcmp(h.method, "HEAD", 4);
	c->body_kind = h.body;
	c->body_left = h.content_length;
	memset(&c->chunk, 0, sizeof c->chunk);
	c->body_done = h.body == HTTP_BODY_NONE;
	const char *qm = memchr(h.target, '?', h.target_len);
	size_t plen = qm ? (size_t)(qm - h.target) : h.target_len;
	c->query_len = 0;
	if (qm) {
		c->query_len = h.target_len - plen - 1;
		if (c->query_len >= sizeof c->query)
			c->query_len = sizeof c->query - 1; /* cut: a value there fails to parse */
		memcpy(c->query, qm + 1, c->query_len);
	}
	c->query[c->query_len] = 0;
	c->route = envd_route_of(h.method, h.method_len, h.target, plen);
	const struct http_header *t = header(&h, AGENT_PROTO_ACCESS_TOKEN_HEADER);
	c->has_token = t && t->value_len < sizeof c->token;
	if (c->has_token) {
		memcpy(c->token, t->value, t->value_len);
		c->token[t->value_len] = 0;
	}
	c->auth_user[0] = 0;
	const struct http_header *a = header(&h, "Authorization");
	if (a && a->value_len > 6 && a->value_len < 200 && !strncasecmp(a->value, "Basic ", 6)) {
		uint8_t dec[160];
		ssize_t n = base64_decode(a->value + 6, a->value_len - 6, dec, sizeof dec - 1);
		if (n > 0) {
			dec[n] = 0;
			char *colon = memchr(dec, ':', (size_t)n);
			if (colon)
				*colon = 0;
			if (strlen((char *)dec) < sizeof c->auth_user)
				snprintf(c->auth_user, sizeof c->auth_user, "%s", (char *)dec);
		}
	}
	c->keepalive_ms = KEEPALIVE_MS;
	const struct http_header *kp = header(&h, "Keepalive-Ping-Interval");
	if (kp && kp->value_len < 8) {
		char v[8];
		memcpy(v, kp->value, kp->value_len);
		v[kp->value_len] = 0;
		unsigned long s = strtoul(v, NULL, 10);
		if (s >= 1 && s * 1000 < KEEPALIVE_MS)
			c->keepalive_ms = (unsigned)s * 1000;
	}
	const struct http_header *ct = header(&h, "Content-Type");
	char ctype[256] = "";
	size_t ct_len = 0;
	if (ct) {
		ct_len = ct->value_len < sizeof ctype ? ct->value_len : sizeof ctype - 1;
		memcpy(ctype, ct->value, ct_len);
		ctype[ct_len] = 0;
	}
	memmove(c->in, c->in + k, c->in_len - (size_t)k);
	c->in_len -= (size_t)k;
	c->deadline = now_ms() + BODY_MS;
	bool body_unread = !c->body_done;

	if (c->route == ENVD_R_NONE) {
		c->keep_alive = c->keep_alive && !body_unread;
		respond_rest_error(c, 404, "no such path");
		return;
	}
	if (c->route == ENVD_R_METHOD_NOT_ALLOWED) {
		c->keep_alive = c->keep_alive && !body_unread;
		respond_rest_error(c, 405, "method not allowed");
		return;
	}
	if (c->route != ENVD_R_HEALTH && !token_ok(c)) {
		c->keep_alive = c->keep_alive && !body_unread;
		respond_rest_error(c, 401, "missing or wrong " AGENT_PROTO_ACCESS_TOKEN_HEADER);
		return;
	}
	if (envd_route_is_rpc(c->route)) {
		bool json = !strncasecmp(ctype, "application/json", 16);
		bool cjson = !strncasecmp(ctype, "application/connect+json", 24);
		bool streams = envd_route_streams(c->route) || c->route == ENVD_R_P_STREAM_INPUT;
		if ((streams && !cjson) || (!streams && !json)) {
			c->keep_alive = c->keep_alive && !body_unread;
			respond_rest_error(c, 415, "this agent speaks Connect with %s",
					   streams ? "application/connect+json"
						   : "application/json");
			return;
		}
		c->enveloped = cjson;
	}
	switch (c->route) {
	case ENVD_R_HEALTH:
		c->keep_alive = c->keep_alive && !body_unread;
		respond(c, 204, NULL, NULL, 0);
		return;
	case ENVD_R_ENVS:
		c->keep_alive = c->keep_alive && !body_unread;
		respond_json(c, 200, json_deep_copy(init_envs));
		return;
	case ENVD_R_METRICS:
		c->keep_alive = c->keep_alive && !body_unread;
		handle_metrics(c);
		return;
	case ENVD_R_FILES_GET:
		c->keep_alive = c->keep_alive && !body_unread;
		handle_download(c);
		return;
	case ENVD_R_FILES_POST:
		handle_upload_start(c, ctype, ct_len);
		if (c->state == C_UPLOAD)
			conn_body(c);
		return;
	default:
		c->state = C_BODY;
		conn_body(c);
	}
}

static void
conn_process(struct conn *c)
{
	while (!c->dead) {
		enum cstate before = c->state;
		size_t had = c->in_len;
		if (c->state == C_HEAD && c->in_len)
			conn_head(c);
		else if (c->state == C_BODY || c->state == C_UPLOAD)
			conn_body(c);
		else if (c->state == C_STREAM || c->state == C_LINGER || c->state == C_DOWNLOAD)
			c->in_len = 0; /* nothing more is read from a client while it is answered */
		if (c->dead || (c->state == before && c->in_len == had))
			break;
	}
}

static void
conn_cb(struct handler *h, uint32_t events)
{
	struct conn *c = (struct conn *)h;
	if (c->dead)
		return;
	if (events & EPOLLOUT) {
		if (!conn_flush(c))
			return;
		conn_after_flush(c);
		if (c->dead)
			return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		/* a request being answered is not read further (one at a time), except to see
		 * the client go */
		bool answering = c->state == C_WRITE || c->state == C_DOWNLOAD ||
				 c->state == C_STREAM || c->state == C_LINGER;
		char scratch[4096];
		char *dst = answering ? scratch : c->in + c->in_len;
		size_t room = answering ? sizeof scratch : sizeof c->in - c->in_len;
		if (room == 0)
			return;
		ssize_t k = recv(c->h.fd, dst, room, 0);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
			/* the client went: with no answer owed, a plain close leaves no TIME_WAIT
			 * here (the client closed first) */
			conn_close(c, true);
			return;
		}
		if (k > 0 && !answering) {
			if (c->state == C_HEAD && c->in_len == 0)
				c->deadline = now_ms() + HEAD_MS; /* from the head's first byte */
			else if (c->state != C_HEAD)
				c->deadline = now_ms() + BODY_MS; /* progress */
			c->in_len += (size_t)k;
			conn_process(c);
		}
	}
}

static void
listener_cb(struct handler *h, uint32_t events)
{
	for (int i = 0; i < 16; i++) {
		int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (n_conns >= MAX_CONNS) {
			struct linger l = {1, 0};
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct conn *c = calloc(1, sizeof *c);
		if (!c) {
			close(fd);
			continue;
		}
		c->h = (struct handler){fd, conn_cb};
		c->dl_fd = c->up_fd = -1;
		c->state = C_HEAD;
		c->deadline = now_ms() + IDLE_MS;
		c->next = conns;
		conns = c;
		n_conns++;
		ep_set(&c->h, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
	}
}

int
envd_init(uint16_t port, char **env)
{
	base_env = env;
	init_envs = json_object();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	/* The listener stays out of the epoll set: gVisor (runsc 20221219) cannot checkpoint a
	 * listening TCP endpoint that still has a waiter ("endpoint still has waiters upon save"),
	 * and an epoll registration is a waiter for as long as it lasts. The main loop poll()s it
	 * instead (a waiter only while that call blocks; a checkpoint interrupts it) and envd_run
	 * accepts without blocking. */
	listener = (struct handler){fd, listener_cb};
	return epfd;
}

int
envd_listen_fd(void)
{
	return listener.fd;
}

static void
timers(void)
{
	uint64_t now = now_ms();
	for (struct conn *c = conns; c; c = c->next) {
		if (c->dead)
			continue;
		if (c->state == C_STREAM && now >= c->next_keepalive) {
			if (c->stream == ST_PROC)
				stream_json(c, json_pack("{s:{s:{}}}", "event", "keepalive"));
			else if (c->stream == ST_WATCH)
				stream_json(c, json_pack("{s:{}}", "keepalive"));
			conn_flush(c);
			continue;
		}
		bool timed = c->state == C_HEAD || c->state == C_BODY || c->state == C_UPLOAD ||
			     c->state == C_LINGER;
		if (!timed || !c->deadline || now < c->deadline)
			continue;
		/* An RST makes the client's kernel drop what it has not acknowledged: before one,
		 * the answer already written must have been taken (a reader making progress gets
		 * more time; one stalled for BODY_MS does not). */
		int outq = 0;
		if ((c->state == C_HEAD || c->state == C_LINGER) &&
		    ioctl(c->h.fd, SIOCOUTQ, &outq) == 0 && outq > 0) {
			if (!c->stall_until || outq < c->last_outq)
				c->stall_until = now + BODY_MS;
			c->last_outq = outq;
			if (now < c->stall_until) {
				c->deadline = now + 1000;
				continue;
			}
		}
		conn_close(c, true); /* idle, stalled, or the client did not close */
	}
}

void
envd_run(void)
{
	struct epoll_event ev[64];
	listener_cb(&listener, EPOLLIN); /* accept4 without blocking: EAGAIN when none waits */
	int n = epoll_wait(epfd, ev, 64, 0);
	for (int i = 0; i < n; i++) {
		struct handler *h = ev[i].data.ptr;
		h->cb(h, ev[i].events);
	}
	timers();
	/* connections closed in this round are freed now that no event refers to them */
	for (struct watcher **pp = &watchers; *pp;) {
		struct watcher *w = *pp;
		if (w->dead) {
			*pp = w->next;
			watcher_release(w);
		} else
			pp = &w->next;
	}
	for (struct conn **pp = &conns; *pp;) {
		struct conn *c = *pp;
		if (c->dead) {
			*pp = c->next;
			conn_free(c);
		} else
			pp = &c->next;
	}
}

int
envd_timeout_ms(void)
{
	return conns ? 1000 : -1;
}

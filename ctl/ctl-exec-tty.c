/* warrenctl exec -i/-t: a command through the sandbox's agent (process.Process/Start, a server
 * stream of its output), with stdin streamed to it (SendInput, CloseStdin at EOF) and, with -t,
 * a PTY of the caller's terminal's size (resized on SIGWINCH by Update) while the caller's
 * terminal is in raw mode. One poll loop over the output stream, stdin, a signalfd and the one
 * control call in flight (input, resize or signal: one at a time keeps their order); the loop
 * never blocks on a call, so output keeps draining while the process reads its input. The
 * terminal's mode is restored on every way out. Runs in warrenctl. */
#include "base64.h"
#include "ctl-agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#define INPUT_CHUNK (32 * 1024)
#define ANSWER_MAX (64 * 1024)

static struct termios saved_tio;
static bool tio_raw;

static void
tty_restore(void)
{
	if (tio_raw) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
		tio_raw = false;
	}
}

static int
tty_make_raw(void)
{
	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -errno;
	struct termios raw = saved_tio;
	cfmakeraw(&raw);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) < 0)
		return -errno;
	tio_raw = true;
	atexit(tty_restore); /* and tty_restore at the loop's end: whichever comes first */
	return 0;
}

static void
win_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	for (int fd = 0; fd <= 2; fd++)
		if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
			*rows = ws.ws_row;
			*cols = ws.ws_col;
			return;
		}
}

/* The one control call in flight. */
struct call {
	int fd;
	const char *what;
	struct http_resp resp;
	char *body;
	size_t len;
};

struct exec {
	const struct agent_target *t;
	bool tty, interactive;
	int stream;
	struct http_resp resp;
	struct envelope_reader env;
	bool started, ended, stream_done;
	uint32_t pid;
	int exit_code;
	/* what waits for the control connection */
	uint8_t *input;
	size_t input_len;
	bool stdin_open, close_pending, resize_pending;
	int signals; /* forwarded so far: the first is SIGTERM, then SIGKILL */
	bool signal_pending;
	struct call call;
};

static int
write_out(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pfd = {fd, POLLOUT, 0};
			poll(&pfd, 1, -1);
			continue;
		}
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void
warn_msg(struct exec *x, const char *msg)
{
	/* in raw mode a newline does not return the carriage */
	fprintf(stderr, "warrenctl: exec: %s%s", msg, x->tty && tio_raw ? "\r\n" : "\n");
}

static int
handle_message(struct exec *x, uint8_t flags, json_t *m)
{
	if (flags & 2) { /* end of stream: an error, or nothing */
		json_t *err = json_object_get(m, "error");
		if (err) {
			char msg[600];
			const char *em = json_string_value(json_object_get(err, "message"));
			snprintf(msg, sizeof msg, "the agent: %s",
				 em ? em : "the process's stream ended with an error");
			warn_msg(x, msg);
			if (!x->ended)
				x->exit_code = 127;
			x->ended = true;
		}
		x->stream_done = true;
		return 0;
	}
	json_t *ev = json_object_get(m, "event");
	json_t *v;
	if ((v = json_object_get(ev, "start"))) {
		json_int_t pid = json_integer_value(json_object_get(v, "pid"));
		if (pid <= 0 || pid > UINT32_MAX)
			return -EBADMSG;
		x->pid = (uint32_t)pid;
		x->started = true;
	} else if ((v = json_object_get(ev, "data"))) {
		const char *k;
		json_t *d;
		json_object_foreach(v, k, d)
		{
			if (!json_is_string(d))
				continue;
			size_t n = json_string_length(d);
			uint8_t *buf = malloc(n / 4 * 3 + 3);
			if (!buf)
				return -ENOMEM;
			ssize_t got = base64_decode(json_string_value(d), n, buf, n / 4 * 3 + 3);
			int r = got < 0 ? -EBADMSG
					: write_out(strcmp(k, "stderr") ? STDOUT_FILENO
									: STDERR_FILENO,
						    buf, (size_t)got);
			free(buf);
			if (r < 0)
				return r;
		}
	} else if ((v = json_object_get(ev, "end"))) {
		x->ended = true;
		x->exit_code = (int)json_integer_value(json_object_get(v, "exitCode"));
		if (!json_is_true(json_object_get(v, "exited"))) {
			/* killed by a signal: the shell's 128 + its number */
			const char *st = json_string_value(json_object_get(v, "status"));
			static const struct {
				const char *s;
				int n;
			} sigs[] = {{"signal: hangup", 1},
				    {"signal: interrupt", 2},
				    {"signal: quit", 3},
				    {"signal: killed", 9},
				    {"signal: terminated", 15}};
			x->exit_code = 255;
			for (size_t i = 0; st && i < sizeof sigs / sizeof sigs[0]; i++)
				if (!strcmp(st, sigs[i].s))
					x->exit_code = 128 + sigs[i].n;
		}
	}
	return 0; /* keepalive and anything newer: nothing to do */
}

/* Drain the output stream (non-blocking): 0, or -errno. */
static int
stream_read(struct exec *x)
{
	static char buf[AGENT_BUF_SIZE];
	for (;;) {
		ssize_t k = http_resp_read_body(&x->resp, buf, sizeof buf);
		if (k == -EAGAIN)
			return 0;
		if (k < 0)
			return (int)k;
		if (k == 0) {
			x->stream_done = true;
			return 0;
		}
		int r = envelope_feed(&x->env, buf, (size_t)k);
		if (r < 0)
			return r;
		uint8_t flags;
		json_t *m;
		while ((r = envelope_next(&x->env, &flags, &m)) > 0) {
			r = handle_message(x, flags, m);
			json_decref(m);
			if (r < 0)
				return r;
		}
		if (r < 0)
			return r;
	}
}

static int
call_start(struct exec *x, const char *method, json_t *req)
{
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body)
		return -ENOMEM;
	char target[128];
	snprintf(target, sizeof target, "/%s", method);
	int fd = agent_connect(x->t, 60);
	int r = fd;
	if (fd >= 0) {
		r = agent_send_head(fd, x->t, "POST", target, "application/json",
				    (int64_t)strlen(body), true);
		if (r >= 0)
			r = agent_write_all(fd, body, strlen(body));
		if (r >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
			r = -errno;
	}
	free(body);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	x->call = (struct call){.fd = fd, .what = method};
	return 0;
}

static void
call_end(struct exec *x)
{
	if (x->call.fd >= 0)
		close(x->call.fd);
	http_resp_done(&x->call.resp);
	free(x->call.body);
	x->call = (struct call){.fd = -1};
}

/* The call's answer, as far as it came: 1 complete (checked), 0 more to come, -errno. */
static int
call_read(struct exec *x)
{
	struct call *c = &x->call;
	if (!c->resp.status || !c->resp.buf) {
		int r = http_resp_read_head(&c->resp, c->fd);
		if (r == -EAGAIN)
			return 0;
		if (r < 0)
			return r;
		c->body = malloc(ANSWER_MAX + 1);
		if (!c->body)
			return -ENOMEM;
	}
	for (;;) {
		ssize_t k = http_resp_read_body(&c->resp, c->body + c->len, ANSWER_MAX - c->len);
		if (k == -EAGAIN)
			return 0;
		if (k < 0)
			return (int)k;
		if (k == 0)
			break;
		c->len += (size_t)k;
	}
	c->body[c->len] = 0;
	if (c->resp.status == 200)
		return 1;
	/* the process ended meanwhile: its end is on the stream, nothing to say */
	if (c->resp.status == 404 && !c->resp.gateway_error)
		return 1;
	char msg[768];
	agent_describe_status(x->t, c->resp.status, c->resp.gateway_error, c->body, msg,
			      sizeof msg);
	warn_msg(x, msg);
	return 1;
}

static json_t *
selector(struct exec *x)
{
	return json_pack("{s:I}", "pid", (json_int_t)x->pid);
}

/* The next control call, in order: a signal, a resize, input, the close of stdin. */
static int
call_next(struct exec *x)
{
	if (x->call.fd >= 0 || !x->started || x->ended)
		return 0;
	if (x->signal_pending) {
		x->signal_pending = false;
		return call_start(x, "process.Process/SendSignal",
				  json_pack("{s:o,s:s}", "process", selector(x), "signal",
					    x->signals > 1 ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM"));
	}
	if (x->resize_pending) {
		x->resize_pending = false;
		unsigned rows, cols;
		win_size(&rows, &cols);
		return call_start(x, "process.Process/Update",
				  json_pack("{s:o,s:{s:{s:i,s:i}}}", "process", selector(x), "pty",
					    "size", "cols", cols, "rows", rows));
	}
	if (x->input_len) {
		char *b = b64_encode(x->input, x->input_len);
		if (!b)
			return -ENOMEM;
		x->input_len = 0;
		json_t *req = json_pack("{s:o,s:{s:s}}", "process", selector(x), "input",
					x->tty ? "pty" : "stdin", b);
		free(b);
		return call_start(x, "process.Process/SendInput", req);
	}
	if (x->close_pending) {
		x->close_pending = false;
		return call_start(x, "process.Process/CloseStdin",
				  json_pack("{s:o}", "process", selector(x)));
	}
	return 0;
}

static int
stream_open(struct exec *x, char **argv)
{
	json_t *args = json_array();
	for (size_t i = 1; args && argv[i]; i++)
		if (json_array_append_new(args, json_string(argv[i])) < 0) {
			json_decref(args);
			args = NULL;
		}
	if (!args)
		return -ENOMEM;
	json_t *req = json_pack("{s:{s:s,s:o},s:b}", "process", "cmd", argv[0], "args", args,
				"stdin", x->interactive && !x->tty);
	if (req && x->tty) {
		unsigned rows, cols;
		win_size(&rows, &cols);
		if (json_object_set_new(
			    req, "pty",
			    json_pack("{s:{s:i,s:i}}", "size", "cols", cols, "rows", rows)) < 0) {
			json_decref(req);
			req = NULL;
		}
	}
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body)
		return -ENOMEM;
	size_t n = strlen(body);
	uint8_t env[5] = {0, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
	x->stream = agent_connect(x->t, 60);
	int r = x->stream;
	if (r >= 0)
		r = agent_send_head(x->stream, x->t, "POST", "/process.Process/Start",
				    "application/connect+json", (int64_t)(5 + n), false);
	if (r >= 0)
		r = agent_write_all(x->stream, env, sizeof env);
	if (r >= 0)
		r = agent_write_all(x->stream, body, n);
	free(body);
	if (r >= 0)
		r = http_resp_read_head(&x->resp, x->stream);
	if (r == -EAGAIN)
		r = -ETIMEDOUT;
	return r;
}

int
ctl_exec_agent(const struct agent_target *t, char **argv, bool interactive, bool tty)
{
	struct exec x = {.t = t,
			 .tty = tty,
			 .interactive = interactive,
			 .stream = -1,
			 .exit_code = 255,
			 .stdin_open = interactive,
			 .call = {.fd = -1}};
	char msg[768];
	int rc = 255, sfd = -1;
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGWINCH);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "warrenctl: exec: signalfd: %s\n", strerror(errno));
		return 255;
	}
	if (interactive && !(x.input = malloc(INPUT_CHUNK))) {
		fprintf(stderr, "warrenctl: exec: out of memory\n");
		goto out;
	}

	int r = stream_open(&x, argv);
	if (r < 0) {
		if (r == -ECONNREFUSED)
			fprintf(stderr,
				"warrenctl: exec: cannot reach the gateway at %s: is "
				"warren-gateway running?\n",
				t->url);
		else
			fprintf(stderr, "warrenctl: exec: talking to the gateway at %s: %s\n",
				t->url, strerror(-r));
		goto out;
	}
	if (x.resp.status != 200) {
		char *body = NULL;
		size_t len;
		if (http_resp_read_all(&x.resp, &body, &len, ANSWER_MAX) < 0)
			body = NULL;
		agent_describe_status(t, x.resp.status, x.resp.gateway_error, body, msg,
				      sizeof msg);
		free(body);
		fprintf(stderr, "warrenctl: exec: %s\n", msg);
		goto out;
	}
	if (fcntl(x.stream, F_SETFL, O_NONBLOCK) < 0) {
		fprintf(stderr, "warrenctl: exec: %s\n", strerror(errno));
		goto out;
	}
	/* what came with the head (the start event, often) is not on the socket any more */
	if ((r = stream_read(&x)) < 0) {
		fprintf(stderr, "warrenctl: exec: the process's output: %s\n", strerror(-r));
		goto out;
	}
	/* raw only once the process exists (a refusal above prints on a sane terminal), and only
	 * with -i: without it stdin is not read, so ^C must stay a signal here (sent on as
	 * SIGTERM) rather than a byte nobody forwards */
	if (tty && interactive && isatty(STDIN_FILENO) && (r = tty_make_raw()) < 0) {
		fprintf(stderr, "warrenctl: exec: the terminal: %s\n", strerror(-r));
		goto out;
	}

	while (!x.stream_done) {
		if ((r = call_next(&x)) < 0) {
			snprintf(msg, sizeof msg, "talking to the gateway at %s: %s", t->url,
				 strerror(-r));
			warn_msg(&x, msg);
			x.stdin_open = false; /* no more input; the output still comes */
			x.input_len = 0;
			x.close_pending = false;
		}
		struct pollfd p[4] = {
			{x.stream, POLLIN, 0}, {sfd, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}};
		/* stdin is read only when its last bytes are sent (the pipe is the bound) */
		if (x.stdin_open && x.started && !x.input_len && x.call.fd < 0)
			p[2] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
		if (x.call.fd >= 0)
			p[3] = (struct pollfd){x.call.fd, POLLIN, 0};
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(msg, sizeof msg, "poll: %s", strerror(errno));
			warn_msg(&x, msg);
			goto out;
		}
		if (p[0].revents) {
			r = stream_read(&x);
			if (r < 0) {
				snprintf(msg, sizeof msg, "the process's output: %s",
					 r == -EPIPE ? "the stream was cut short" : strerror(-r));
				warn_msg(&x, msg);
				goto out;
			}
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == sizeof si) {
				if (si.ssi_signo == SIGWINCH)
					x.resize_pending = tty;
				else if (!x.started || ++x.signals > 2) {
					rc = 128 + (int)si.ssi_signo;
					goto out_rc;
				} else
					x.signal_pending = true;
			}
		}
		if (p[2].revents) {
			ssize_t k = read(STDIN_FILENO, x.input, INPUT_CHUNK);
			if (k > 0)
				x.input_len = (size_t)k;
			else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
				/* EOF: a pipe's end closes the process's stdin; a PTY has none, so
				 * input that was no terminal ends with its EOF character (^D) */
				x.stdin_open = false;
				x.close_pending = !tty;
				if (tty && !tio_raw) {
					x.input[0] = 0x04;
					x.input_len = 1;
				}
			}
		}
		if (p[3].revents && (r = call_read(&x)) != 0) {
			if (r < 0) {
				snprintf(msg, sizeof msg, "%s: %s", x.call.what, strerror(-r));
				warn_msg(&x, msg);
			}
			call_end(&x);
		}
	}
	if (!x.ended) {
		warn_msg(&x, "the agent's stream ended without the process's end");
		goto out;
	}
	rc = x.exit_code < 0 || x.exit_code > 255 ? 255 : x.exit_code;
	goto out_rc;
out:
	rc = 255;
out_rc:
	tty_restore();
	call_end(&x);
	if (x.stream >= 0)
		close(x.stream);
	http_resp_done(&x.resp);
	envelope_reader_free(&x.env);
	free(x.input);
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

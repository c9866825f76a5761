/* The pure parts of the agent's envd API (agent/envd.c): Connect envelopes, chunked request
 * bodies, multipart/form-data uploads, query strings, base64, the Connect error codes and the
 * decoding of the JSON requests of process.Process and filesystem.Filesystem (jansson). No I/O:
 * everything here reads a buffer a client filled, so it is fuzzed whole
 * (tests/fuzz/fuzz-envd-http.c). Wire names follow E2B's spec/envd (process.proto,
 * filesystem.proto, envd.yaml); Warren's mapping is documented in docs/E2B.md. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ENVD_MAX_BODY (4u << 20) /* a unary request or one envelope, JSON */
#define ENVD_MAX_ARGS 4096	 /* argv entries of a process */
#define ENVD_MAX_ENVS 4096	 /* env vars of a process or of /init */
#define ENVD_MAX_STR 65536	 /* one string of a request (a path, a tag, an env var) */
#define ENVD_MAX_PART_HEAD 8192	 /* the headers of one multipart part */
#define ENVD_MAX_BOUNDARY 70	 /* RFC 2046 */

/* Connect codes, with the HTTP status a unary error carries. */
enum envd_code {
	ENVD_OK,
	ENVD_CANCELED,
	ENVD_UNKNOWN,
	ENVD_INVALID_ARGUMENT,
	ENVD_DEADLINE_EXCEEDED,
	ENVD_NOT_FOUND,
	ENVD_ALREADY_EXISTS,
	ENVD_PERMISSION_DENIED,
	ENVD_RESOURCE_EXHAUSTED,
	ENVD_FAILED_PRECONDITION,
	ENVD_ABORTED,
	ENVD_OUT_OF_RANGE,
	ENVD_UNIMPLEMENTED,
	ENVD_INTERNAL,
	ENVD_UNAVAILABLE,
	ENVD_DATA_LOSS,
	ENVD_UNAUTHENTICATED,
};
const char *envd_code_to_string(enum envd_code c);
int envd_code_http_status(enum envd_code c);
/* errno of a failed file operation -> Connect code */
enum envd_code envd_code_from_errno(int e);

/* What a request asks for, from its method and path (query string not included). */
enum envd_route {
	ENVD_R_NONE,
	ENVD_R_HEALTH,
	ENVD_R_INIT,
	ENVD_R_ENVS,
	ENVD_R_METRICS,
	ENVD_R_FILES_GET,
	ENVD_R_FILES_POST,
	/* process.Process */
	ENVD_R_P_START,
	ENVD_R_P_CONNECT,
	ENVD_R_P_LIST,
	ENVD_R_P_UPDATE,
	ENVD_R_P_STREAM_INPUT,
	ENVD_R_P_SEND_INPUT,
	ENVD_R_P_SEND_SIGNAL,
	ENVD_R_P_CLOSE_STDIN,
	/* filesystem.Filesystem */
	ENVD_R_F_STAT,
	ENVD_R_F_MAKE_DIR,
	ENVD_R_F_MOVE,
	ENVD_R_F_LIST_DIR,
	ENVD_R_F_REMOVE,
	ENVD_R_F_WATCH_DIR,
	ENVD_R_F_CREATE_WATCHER,
	ENVD_R_F_GET_WATCHER_EVENTS,
	ENVD_R_F_REMOVE_WATCHER,
	ENVD_R_METHOD_NOT_ALLOWED, /* a known path with another method */
};
enum envd_route envd_route_of(const char *method, size_t method_len, const char *path,
			      size_t path_len);
/* Server-streaming RPCs (their request is one envelope, their answer a stream). */
bool envd_route_streams(enum envd_route r);
/* Connect RPCs (POST, JSON or enveloped JSON) rather than envd's REST paths. */
bool envd_route_is_rpc(enum envd_route r);

/* A Connect envelope at the start of buf: 1 byte of flags, 4 bytes of big-endian length, the
 * message. Returns the envelope's whole length (5 + len), 0 if more must arrive, -EMSGSIZE if
 * it announces more than max. */
ssize_t envd_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *flags,
			    size_t *msg_len);
#define ENVD_ENVELOPE_END 0x02
#define ENVD_ENVELOPE_COMPRESSED 0x01

/* Chunked transfer coding, decoded in place: data bytes are moved to the front of the buffer.
 * Zero-initialised = at the start of a body. */
struct envd_chunked {
	int state;
	uint32_t line;
	uint64_t remaining;
};
/* Decode buf (len bytes). Returns bytes of framing and data consumed (all of them may be
 * dropped from the input), with *data_len data bytes now at buf[0..]; *done when the body
 * ended (trailers included); -EBADMSG on bad framing. */
ssize_t envd_chunked_decode(struct envd_chunked *c, char *buf, size_t len, size_t *data_len,
			    bool *done);

/* A multipart/form-data body, parsed as it streams in; each part's data is handed out as it
 * comes, never held whole. */
enum envd_mp_state { MP_PREAMBLE, MP_HEADERS, MP_DATA, MP_AFTER_DELIM, MP_END, MP_ERROR };
struct envd_multipart {
	enum envd_mp_state state;
	char delim[ENVD_MAX_BOUNDARY + 8]; /* "\r\n--" boundary */
	size_t delim_len;
	char head[ENVD_MAX_PART_HEAD]; /* the current part's headers */
	size_t head_len;
	char filename[4096]; /* of the current part (Content-Disposition), "" if none */
	char name[256];
	unsigned parts;
};
/* boundary from a Content-Type value; 0 or -EINVAL */
int envd_multipart_init(struct envd_multipart *m, const char *content_type, size_t ct_len);
/* Events of envd_multipart_feed. */
struct envd_mp_sink {
	int (*part_begin)(struct envd_multipart *m, void *ud);
	int (*part_data)(struct envd_multipart *m, const char *p, size_t n, void *ud);
	int (*part_end)(struct envd_multipart *m, void *ud);
};
/* Feed len bytes; returns how many were consumed (the rest, a possible partial delimiter, must
 * be fed again with more bytes after it), or a negative errno from the sink, or -EBADMSG.
 * eof: no more bytes will come. */
ssize_t envd_multipart_feed(struct envd_multipart *m, const char *buf, size_t len, bool eof,
			    const struct envd_mp_sink *sink, void *ud);

/* Query string: the value of name, percent-decoded into out (NUL-terminated). 1 found, 0 not
 * found, -EINVAL malformed or too long (or holding a NUL). */
int envd_query_get(const char *query, size_t qlen, const char *name, char *out, size_t out_size);

/* Decoded requests. Strings point into a buffer the decoder allocates (free with
 * envd_request_free); every count and length is bounded above. */
struct envd_selector {
	bool has_pid, has_tag;
	uint32_t pid;
	char *tag;
};
struct envd_request {
	enum envd_route route;
	/* process.Start / List info */
	char *cmd;
	char **args;
	size_t n_args;
	char **env_keys, **env_values;
	size_t n_envs;
	char *cwd;
	bool has_pty;
	uint32_t cols, rows;
	char *tag;
	int stdin_mode; /* -1 absent, 0 false, 1 true */
	/* selectors and inputs */
	struct envd_selector sel;
	uint8_t *input; /* stdin or pty bytes */
	size_t input_len;
	bool input_pty;
	int signal; /* 9, 15 */
	/* filesystem */
	char *path, *destination;
	uint32_t depth;
	bool recursive;
	char *watcher_id;
	/* /init */
	char *access_token;
	bool has_access_token;
	char *timestamp;
	char *default_user, *default_workdir;
};
/* Parse the JSON body of route r into q. 0, or a Connect code (with why) for a request that does
 * not decode or breaks a bound. */
enum envd_code envd_request_decode(enum envd_route r, const char *json, size_t len,
				   struct envd_request *q, char *why, size_t why_size);
void envd_request_free(struct envd_request *q);

/* RFC 3339 (with fraction and Z or offset) -> seconds and nanoseconds; 0 or -EINVAL. */
int envd_parse_rfc3339(const char *s, int64_t *sec, long *nsec);

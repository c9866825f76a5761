/* warren-supervisor: the unprivileged owner of the D-Bus API and of sandbox state. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "backend.h"
#include "bus-errors.h"
#include "cgroup-path.h"
#include "daemon.h"
#include "egress-policy.h"
#include "helper-client.h"
#include "ipc-client.h"
#include "names.h"
#include "operation.h"
#include "sandbox-state.h"

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define SANDBOX_PREFIX "/org/warren/Warren1/sandbox"
#define SANDBOX_IFACE "org.warren.Warren1.Sandbox"

struct template
{
	char name[33];
	char *rootfs;
	char **argv;
	size_t argc;
	unsigned port;
	uint64_t memory_limit;
	bool allow_outbound;
	char *egress;	  /* its sandboxes' egress policy, canonical; NULL: allow_outbound's */
	uint32_t idle_ms; /* 0: the supervisor's default */
	bool builtin;
	bool warm;	  /* creates restore an image of the started app (tag warm-<name>) */
	unsigned standby; /* warm: sandboxes kept restored ahead, per backend in use */
	uint32_t pids_max, cpu_millis; /* its own bounds (0: netnsd's host-wide caps) */
	unsigned warming; /* per backend (bit 0 gvisor, 1 microvm): a cold sandbox is being
			   * started to take that image */
	char **env;	  /* KEY=value for the program (template-options.c), NULL-terminated */
	size_t envc;
	char *cwd;     /* NULL: / */
	bool user_set; /* run the program as uid:gid (default root) */
	uint32_t uid, gid;
	bool imported; /* its tree is warren-importd's: removed with the template */
	struct template *next;
};

struct fork_job;

struct sandbox {
	char id[SANDBOX_ID_LEN + 1];
	bool standby; /* restored ahead for a warm create: invisible until a create takes it */
	char path[80];
	char template_name[33];
	enum backend backend;
	enum sandbox_state state;
	char reason[256];
	char address[16];
	char egress[EGRESS_POLICY_MAX]; /* canonical (sandbox-egress.c); "": its template's */
	int slot;			/* -1 none */
	int nsfd;
	int pid;
	char cgroup[CGROUP_PATH_MAX]; /* as netnsd names it (sandbox_set_cgroup); "" until then */
	uint64_t created_usec;	      /* realtime */
	uint64_t t_create_us, t_claimed_us, t_spawned_us, t_ready_us; /* monotonic */
	uint32_t start_timeout_ms;
	bool spawning;		    /* a spawn is in flight */
	bool destroy_wanted;	    /* Destroy() arrived while spawning */
	bool runtime_alive;	    /* netnsd has a runtime for it */
	sd_bus_message *create_msg; /* a CreateSandbox waiting (wait=true or pool) */
	bool reclaiming;	    /* snapshotd is reclaiming it: a thaw waits */
	bool thaw_pending;
	sd_bus_message *thaw_msg;
	uint64_t reclaimed_bytes;
	int image_fd; /* restore from this image instead of a cold start */
	char restoring_tag[33];
	struct fork_job *fork_job; /* a child of ForkTag: report to the job, not to D-Bus */
	uint64_t t_pause_us;	   /* snapshot: when the parent stopped answering */
	bool warmer;		   /* started only to take its template's warm image */
	uint64_t last_pause_us;
	bool reply_when_running;
	struct event *start_timer;
	struct sandbox *next;
};

struct supervisor {
	struct daemon_common dc;
	sd_bus *bus;
	struct helper helpers[HELPER_MAX];
	struct template *templates;
	struct sandbox *sandboxes;
	char *state_dir;
	char *templates_dir;
	char *gateway_url;
	char *gateway_domain;
	uint32_t idle_ms;
	unsigned max_templates; /* AddTemplate refuses more (each is a record on disk) */
	bool readopted;
};

extern struct supervisor *sup;

/* template-options.c: env, cwd and user of templates (AddTemplate and ImportTemplate options,
 * read back by GetTemplate) and what a spawn passes to the runtime */
struct Warren__V1__SpawnSandboxRequest;
int template_option_read(sd_bus_message *m, const char *key, struct template *t, sd_bus_error *err);
int template_spawn_fill(const struct template *t, const char *sandbox_id,
			struct Warren__V1__SpawnSandboxRequest *q, char ***env_out);

/* sandbox.c */
/* What the features above sandbox.c learn from it (set by main.c, as helper_hooks): forgotten
 * is called when a sandbox's record goes for good (destroyed, or never came up). */
struct sandbox_hooks {
	void (*forgotten)(const struct sandbox *sb);
	/* its state or reason changed (sandbox-dbus.c: StateChanged, PropertiesChanged) */
	void (*state_changed)(struct sandbox *sb);
	/* it appears on D-Bus (added) or leaves it (sandbox-dbus.c: SandboxNew, SandboxRemoved) */
	void (*announced)(struct sandbox *sb, bool added);
	/* it answers on its port, before it moves to running (metrics.c times the create, restore
	 * or snapshot pause: t_pause_us is still set) */
	void (*answered)(const struct sandbox *sb);
	/* a warmer is running (warm.c takes its template's image) */
	void (*warmer_ready)(struct sandbox *sb);
	/* a warmer ended before it ran (warm.c's warm_done: ok is false) */
	void (*warmer_done)(const char *template_name, const char *backend, bool ok);
	/* a fork child of job j came up (ok) or did not (snapshot.c's fork job) */
	void (*fork_child_done)(struct fork_job *j, const char *id, bool ok, const char *error);
	/* it was frozen (reclaim.c pushes its pages out) */
	void (*frozen)(struct sandbox *sb);
	/* the gateway found it idle: true when its freeze waits (exec.c: an exec runs) */
	bool (*idle_deferred)(struct sandbox *sb);
};
void sandbox_hooks_set(const struct sandbox_hooks *h);
struct sandbox *sandbox_find(struct supervisor *s, const char *id);
/* The template registry's lookup (its list is templates.c's): here, below the features,
 * because a spawn and a route push read the template. */
struct template *template_find(struct supervisor *s, const char *name);
void sandbox_route_refresh(const char *id);
/* backend: "gvisor" or "microvm" (the Backends property lists what netnsd serves) */
int sandbox_create(struct supervisor *s, sd_bus_message *m, struct template *t, const char *backend,
		   uint32_t pool_timeout_ms, uint32_t start_timeout_ms, bool wait,
		   sd_bus_error *err);
int sandbox_create_from_image(struct supervisor *s, struct template *t, const char *backend,
			      int image_fd, const char *tag, struct fork_job *job,
			      sd_bus_error *err);
/* A create that restores image_fd (tag) and answers m like CreateSandbox. */
int sandbox_create_restoring(struct supervisor *s, sd_bus_message *m, struct template *t,
			     const char *backend, uint32_t pool_timeout_ms,
			     uint32_t start_timeout_ms, bool wait, int image_fd, const char *tag,
			     sd_bus_error *err);

/* Visible on D-Bus: created (a slot claimed) and not a standby. */
bool sandbox_visible(const struct sandbox *sb);
/* Restore image_fd (tag) into a standby sandbox of t. */
struct sandbox *sandbox_create_standby(struct supervisor *s, struct template *t,
				       const char *backend, int image_fd, const char *tag);
/* A create takes a standby sandbox: it becomes visible and m is answered at once. */
void sandbox_take_standby(struct sandbox *sb, sd_bus_message *m);
/* A cold create nobody waits for; returns the sandbox (NULL on error). */
struct sandbox *sandbox_create_internal(struct supervisor *s, struct template *t,
					const char *backend);
int sandbox_destroy(struct sandbox *sb);
void sandbox_snapshot_begin(struct sandbox *sb);
void sandbox_snapshot_aborted(struct sandbox *sb);
void sandbox_restore(struct sandbox *sb, int image_fd, const char *tag, uint64_t pause_started);
void sandbox_restore_failed(struct sandbox *sb, const char *why);
void ipc_ignore_reply(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud);
int sandbox_freeze(struct sandbox *sb, bool freeze, sd_bus_message *m);
/* 0, or -ENOMEM: nothing was asked and m (if any) is the caller's to answer */
int freeze_request(struct sandbox *sb, bool freeze, sd_bus_message *m);
/* The one way a sandbox's state changes: 0, or -EINVAL (logged) when its state does not accept
 * ev (sandbox-state.c's table). */
int sandbox_transition(struct sandbox *sb, enum sandbox_event ev, const char *reason);
void sandboxes_push_routes(struct supervisor *s);
/* sandbox.c, for the features that create or end sandboxes without a D-Bus call (readopt.c):
 * a record in the list; its removal (the forgotten hook runs); the route pushed to the gateway
 * (cb NULL: the answer is ignored); the runtime and slot given back, then the record forgotten
 * when forget; a stop or failure that keeps the record (and a 502 route with the reason). */
struct sandbox *sandbox_new(struct supervisor *s, const char *id, const char *template_name);
void sandbox_forget(struct sandbox *sb);
void route_push(struct sandbox *sb, ipc_reply_fn cb, void *ud);
void sandbox_release(struct sandbox *sb, bool forget);
void sandbox_fail(struct sandbox *sb, enum sandbox_state st, const char *reason);
/* Keep the cgroup netnsd names for the sandbox (its memory and CPU figures are read there). */
void sandbox_set_cgroup(struct sandbox *sb, const char *cgroup);
/* readopt.c: the records read back at start; matched with netnsd's runtimes once it answers */
void sandboxes_load(struct supervisor *s);
void sandboxes_reconcile(struct supervisor *s);
void sandbox_on_event(const IpcResponse *ev);
char *sandbox_url(struct sandbox *sb);
unsigned sandbox_count(struct supervisor *s);

/* journal.c: log lines to journald with SANDBOX_ID=, TEMPLATE=, BACKEND= (force, or when
 * stderr is the journal) */
void journal_init(bool force);

/* supervisor-lockdown.c */
extern const struct seccomp_policy supervisor_seccomp;

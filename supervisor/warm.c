/* Warm templates (supervisor): a template marked warm is cold-started once, waited on until
 * its app answers, checkpointed into the tag warm-<name> (warm-<name>-vm for microVMs; never
 * compressed) and thrown away;
 * from then on every create of the template restores that image. Until the image exists,
 * creates start cold. Removing the tag (RemoveTag) makes the next create warm it again.
 * With the template option standby=N, N sandboxes per backend are kept restored ahead. */
#include "log.h"
#include "macro.h"
#include "sandbox-egress.h"
#include "snapshot.h"
#include "supervisor.h"
#include "warm.h"

#include <stdio.h>
#include <string.h>

struct warm_create_ctx {
	sd_bus_message *m;
	char template_name[33];
	char backend[16];
	uint32_t pool_timeout_ms, start_timeout_ms;
	bool wait;
};

/* One warm image per template and backend: warm-<name> (gVisor), warm-<name>-vm (microVM). */
void
warm_tag(const char *template_name, const char *backend, char *tag, size_t size)
{
	snprintf(tag, size, "warm-%s%s", template_name,
		 backend_from_string(backend) == BACKEND_MICROVM ? "-vm" : "");
}

/* The template whose warm image tag is (for either backend), or NULL. */
struct template *
warm_tag_owner(const char *tag)
{
	static const char *const backends[] = {"gvisor", "microvm"};
	for (struct template *t = sup->templates; t; t = t->next)
		for (size_t i = 0; t->warm && i < ELEMENTSOF(backends); i++) {
			char own[64];
			warm_tag(t->name, backends[i], own, sizeof own);
			if (!strcmp(own, tag))
				return t;
		}
	return NULL;
}

static unsigned
warm_bit(const char *backend)
{
	return backend_from_string(backend) == BACKEND_MICROVM ? 2u : 1u;
}

static void
warm_build(struct template *t, const char *backend)
{
	char tag[64];
	warm_tag(t->name, backend, tag, sizeof tag);
	if ((t->warming & warm_bit(backend)) || !template_name_valid(tag))
		return;
	struct sandbox *sb = sandbox_create_internal(sup, t, backend);
	if (!sb)
		return;
	t->warming |= warm_bit(backend);
	sb->warmer = true;
	log_info("Template %s: warming (sandbox %s will be checkpointed into %s)", t->name, sb->id,
		 tag);
}

void
warm_sandbox_ready(struct sandbox *sb)
{
	char tag[64];
	warm_tag(sb->template_name, backend_to_string(sb->backend), tag, sizeof tag);
	sd_bus_error e = SD_BUS_ERROR_NULL;
	/* true: a warm image, so the warmer is not restored and snapshotd stores it uncompressed
	 * (CommitImage's compression: snapshotd does not read the policy from the tag's name) */
	if (snapshot_start(sb, NULL, tag, 0, true, &e) < 0) {
		log_warning("Template %s: cannot take its warm image: %s", sb->template_name,
			    e.message);
		sb->warmer = false;
		warm_done(sb->template_name, backend_to_string(sb->backend), false);
		sandbox_destroy(sb);
	}
	sd_bus_error_free(&e);
}

void
warm_done(const char *template_name, const char *backend, bool ok)
{
	struct template *t = template_find(sup, template_name);
	if (!t)
		return;
	t->warming &= ~warm_bit(backend);
	log_info("Template %s: warm %s image %s", t->name, backend,
		 ok ? "ready" : "failed; creates stay cold");
}

/* Standby sandboxes: a warm template with standby=N keeps N sandboxes per backend restored
 * from its warm image ahead of time, invisible; a create takes one (it is already routed and
 * answering, so the create costs a D-Bus call) and another is restored behind it. */
static struct sandbox *
standby_find(const char *template_name, const char *backend, bool ready, unsigned *count)
{
	struct sandbox *found = NULL;
	*count = 0;
	for (struct sandbox *sb = sup->sandboxes; sb; sb = sb->next) {
		if (!sb->standby || strcmp(sb->template_name, template_name) ||
		    (int)sb->backend != backend_from_string(backend) ||
		    sb->state == SANDBOX_FAILED || sb->state == SANDBOX_EXITED ||
		    sb->state == SANDBOX_DESTROYING)
			continue;
		(*count)++;
		if (ready && !found &&
		    (sb->state == SANDBOX_RUNNING || sb->state == SANDBOX_FROZEN))
			found = sb;
	}
	return found;
}

static void
standby_refill(struct template *t, const char *backend, int image_fd, const char *tag)
{
	unsigned have;
	standby_find(t->name, backend, false, &have);
	for (; have < t->standby; have++)
		if (!sandbox_create_standby(sup, t, backend, image_fd, tag))
			return;
}

/* The image snapshotd opened under a warm tag was taken from this template on this backend. */
static bool
warm_image_matches(const IpcResponse *resp, const struct template *t, const char *backend)
{
	const Warren__V1__ImageInfo *im =
		resp && resp->body_case == WARREN__V1__RESPONSE__BODY_OPEN_IMAGE && resp->open_image
			? resp->open_image->image
			: NULL;
	if (im && im->template_name && !strcmp(im->template_name, t->name) &&
	    (int)im->backend == backend_from_string(backend))
		return true;
	log_warning("Template %s: the image under its warm tag was taken from template '%s' on "
		    "'%s', not from it on %s; not restored",
		    t->name, im && im->template_name ? im->template_name : "?",
		    im && backend_to_string(im->backend) ? backend_to_string(im->backend) : "?",
		    backend);
	return false;
}

static void
warm_open_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct warm_create_ctx *c = ud;
	struct template *t = template_find(sup, c->template_name);
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int k = 0;
	if (!c->m) {
		/* only refilling the standby sandboxes */
		if (t && r == 0 && n_fds == 1 && warm_image_matches(resp, t, c->backend)) {
			char tag[64];
			warm_tag(t->name, c->backend, tag, sizeof tag);
			standby_refill(t, c->backend, fds[0], tag);
		}
	} else if (!t)
		k = sd_bus_error_setf(&e, ERR("NoSuchTemplate"), "Template %s was removed",
				      c->template_name);
	else if (r == 0 && n_fds == 1 && !warm_image_matches(resp, t, c->backend)) {
		/* an image under this template's warm tag that is not its own: never restored into
		 * its sandboxes; this create starts cold and the image stays for an operator */
		k = sandbox_create(sup, c->m, t, c->backend, c->pool_timeout_ms,
				   c->start_timeout_ms, c->wait, &e);
	} else if (r == 0 && n_fds == 1) {
		char tag[64];
		warm_tag(t->name, c->backend, tag, sizeof tag);
		k = sandbox_create_restoring(sup, c->m, t, c->backend, c->pool_timeout_ms,
					     c->start_timeout_ms, c->wait, fds[0], tag, &e);
		if (k >= 0)
			standby_refill(t, c->backend, fds[0], tag);
	} else {
		/* no (valid) warm image yet: this create starts cold, and one is taken */
		k = sandbox_create(sup, c->m, t, c->backend, c->pool_timeout_ms,
				   c->start_timeout_ms, c->wait, &e);
		warm_build(t, c->backend);
	}
	if (k < 0 && c->m)
		sd_bus_reply_method_error(c->m, &e);
	sd_bus_error_free(&e);
	ipc_close_fds(fds, n_fds);
	if (c->m)
		sd_bus_message_unref(c->m);
	free(c);
}

int
warm_create(struct supervisor *s, sd_bus_message *m, struct template *t, const char *backend,
	    uint32_t pool_timeout_ms, uint32_t start_timeout_ms, bool wait)
{
	unsigned have;
	/* a standby has the template's egress policy: a create that asks for another one starts
	 * its own sandbox rather than have the template's for a moment */
	char egress[EGRESS_POLICY_MAX];
	bool own_egress = sandbox_egress_for_create(m, t, egress, sizeof egress);
	struct sandbox *sb =
		t->standby && !own_egress ? standby_find(t->name, backend, true, &have) : NULL;
	if (sb) {
		sandbox_take_standby(sb, m);
		m = NULL; /* answered: what follows only restores the next standby */
	}
	struct warm_create_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return m ? -ENOMEM : 1; /* answered already: only the next standby is lost */
	c->m = m ? sd_bus_message_ref(m) : NULL;
	snprintf(c->template_name, sizeof c->template_name, "%s", t->name);
	snprintf(c->backend, sizeof c->backend, "%s", backend);
	c->pool_timeout_ms = pool_timeout_ms;
	c->start_timeout_ms = start_timeout_ms;
	c->wait = wait;
	char tag[64];
	warm_tag(t->name, backend, tag, sizeof tag);
	/* AddTemplate and the load refuse warm names too long for a tag; never ask snapshotd
	 * for one it must refuse */
	if (!tag_name_valid(tag)) {
		warm_open_done(NULL, -EINVAL, NULL, 0, c);
		return 1;
	}
	if (image_open_call(tag, 30000, warm_open_done, c) < 0)
		warm_open_done(NULL, -ENOTCONN, NULL, 0, c);
	return 1;
}

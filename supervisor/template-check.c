/* AddTemplate refuses a bad root filesystem at once, not at the first create: after the
 * supervisor's own checks it asks netnsd (CheckRootfs), whose spawner opens the tree beneath the
 * templates directory as a spawn would and checks it (no device node, everything root's and
 * writable by root only, no mount point): the check is made where the privilege it guards is,
 * with the same code (netnsd/spawner/rootfs.c). The spawner checks again at every create (the
 * tree may change after AddTemplate; its cache notices). */
#include "log.h"
#include "netnsd-client.h"
#include "supervisor.h"
#include "templates.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct check_ctx {
	struct template *t;
	struct operation *op;
};

static void
rootfs_checked(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct check_ctx *c = ud;
	ipc_close_fds(fds, n_fds);
	if (r < 0) {
		const char *why = helper_message(resp, strerror(-r));
		log_warning("Template %s refused: %s", c->t->name, why);
		operation_error(&c->op,
				r == -ENOTCONN || r == -ETIMEDOUT ? ERR("HelperUnavailable")
								  : ERR("InvalidPath"),
				"Template %s: %s", c->t->name, why);
		template_free(c->t);
	} else {
		/* checked again: another AddTemplate of the same name may have come meanwhile */
		sd_bus_error e = SD_BUS_ERROR_NULL;
		if (template_add(sup, c->t, &e) < 0) {
			operation_error_bus(&c->op, &e);
			template_free(c->t);
		} else
			operation_return(&c->op, "");
		sd_bus_error_free(&e);
	}
	free(c);
}

int
template_add_checked(struct supervisor *s, struct template *t, sd_bus_message *m, sd_bus_error *err)
{
	int r = template_check(s, t, err);
	if (r < 0)
		return r;
	struct check_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	Warren__V1__CheckRootfsRequest q = WARREN__V1__CHECK_ROOTFS_REQUEST__INIT;
	q.rootfs = t->rootfs;
	c->t = t;
	c->op = operation_new(m);
	if (!c->op) {
		free(c);
		return -ENOMEM;
	}
	/* a big tree is walked once (then cached by the spawner): up to two minutes */
	r = netnsd_client_check_rootfs(&q, 120000, rootfs_checked, c);
	if (r < 0) {
		operation_cancel(&c->op);
		free(c);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "netnsd, which checks the template's rootfs, is not "
					 "connected");
	}
	return 1;
}

/* libcap-ng capability drop and user switch, shared by all Warren daemons. Order: bounding set
 * first (needs CAP_SETPCAP, which only root still has), then the ids with the kept capabilities
 * (capng_change_id: keepcaps, setresgid, setgroups(0), setresuid, re-apply), then a read-back
 * of the result so a drop that silently kept more is an error, then no_new_privs. */
#include "privdrop.h"
#include "log.h"

#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

int
privdrop_lookup_user(const char *user, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(user);
	if (!pw)
		return -ESRCH;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* The process holds exactly caps in effective and permitted (and in the bounding set when
 * check_bounding), nothing inheritable or ambient. */
static int
caps_verify(const int *caps, size_t n_caps, bool check_bounding)
{
	unsigned last = CAP_LAST_CAP;
	if (capng_get_caps_process() < 0)
		return log_error_errno(-EPERM, "Cannot read back capabilities: %m");
	for (int c = 0; c <= (int)last; c++) {
		bool want = false;
		for (size_t i = 0; i < n_caps; i++)
			want |= caps[i] == c;
		if (capng_have_capability(CAPNG_EFFECTIVE, (unsigned)c) != want ||
		    capng_have_capability(CAPNG_PERMITTED, (unsigned)c) != want ||
		    capng_have_capability(CAPNG_INHERITABLE, (unsigned)c) ||
		    capng_have_capability(CAPNG_AMBIENT, (unsigned)c) ||
		    (check_bounding &&
		     capng_have_capability(CAPNG_BOUNDING_SET, (unsigned)c) != want))
			return log_error_errno(-EPERM, "Capability %s is %s after the drop",
					       capng_capability_to_name((unsigned)c) ?: "?",
					       want ? "missing" : "still held");
	}
	return 0;
}

static int
caps_select(const int *caps, size_t n_caps)
{
	capng_clear(CAPNG_SELECT_ALL);
	for (size_t i = 0; i < n_caps; i++)
		if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
				 (unsigned)caps[i]) < 0)
			return log_error_errno(-EINVAL, "Unknown capability %d", caps[i]);
	return 0;
}

int
privdrop_apply(const char *user, const int *caps, size_t n_caps)
{
	uid_t uid = 0;
	gid_t gid = 0;
	int r;
	if (user) {
		r = privdrop_lookup_user(user, &uid, &gid);
		if (r < 0)
			return log_error_errno(r,
					       "User %s does not exist (scripts/setup.sh or "
					       "sysusers.d create it): %m",
					       user);
	}
	if (geteuid() != 0) {
		/* Started unprivileged already: as the right user, with the listed capabilities
		 * permitted (ambient from setpriv or systemd); keep those, drop the rest. */
		if (user && geteuid() != uid)
			return log_error_errno(-EPERM, "Started as uid %d, not as %s: %m",
					       (int)geteuid(), user);
		capng_get_caps_process();
		for (size_t i = 0; i < n_caps; i++)
			if (!capng_have_capability(CAPNG_PERMITTED, (unsigned)caps[i]))
				return log_error_errno(-EPERM, "Needs %s (ambient or as root): %m",
						       capng_capability_to_name((unsigned)caps[i]));
		r = caps_select(caps, n_caps);
		if (r < 0)
			return r;
		/* the bounding set stays as the launcher set it: lowering it needs CAP_SETPCAP */
		if (capng_apply(CAPNG_SELECT_CAPS) < 0 || capng_apply(CAPNG_SELECT_AMBIENT) < 0)
			return log_error_errno(-EPERM, "Failed to drop capabilities: %m");
		r = caps_verify(caps, n_caps, false);
		if (r < 0)
			return r;
	} else {
		r = caps_select(caps, n_caps);
		if (r < 0)
			return r;
		/* Bounding set and ambient first, while CAP_SETPCAP is still held. */
		if (capng_apply(CAPNG_SELECT_BOUNDS) < 0 || capng_apply(CAPNG_SELECT_AMBIENT) < 0)
			return log_error_errno(-EPERM, "Failed to set the bounding set: %m");
		if (user && uid != 0) {
			r = capng_change_id((int)uid, (int)gid, CAPNG_DROP_SUPP_GRP);
			if (r == 0 && (getuid() != uid || geteuid() != uid || getgid() != gid))
				r = -100;
		} else
			r = capng_apply(CAPNG_SELECT_CAPS);
		if (r < 0)
			return log_error_errno(-EPERM,
					       "Failed to switch to %s keeping %zu "
					       "capabilities (libcap-ng %d)",
					       user ? user : "root", n_caps, r);
		r = caps_verify(caps, n_caps, true);
		if (r < 0)
			return r;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return log_error_errno(-errno, "PR_SET_NO_NEW_PRIVS: %m");
	return 0;
}

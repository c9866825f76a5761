/* libcap-ng capability drop and user switch, shared by all Warren daemons. */
#include "privdrop.h"
#include "log.h"

#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
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

int
privdrop_apply(const char *user, const int *caps, size_t n_caps)
{
	uid_t uid = 0;
	gid_t gid = 0;
	if (user) {
		int r = privdrop_lookup_user(user, &uid, &gid);
		if (r < 0)
			return log_error_errno(r, "User %s does not exist: %m", user);
	}
	if (geteuid() != 0) {
		/* Started unprivileged already (tests, units with User=): nothing to keep. */
		if (n_caps > 0)
			return log_error_errno(-EPERM, "Needs root to keep its capabilities: %m");
	} else {
		capng_clear(CAPNG_SELECT_BOTH);
		for (size_t i = 0; i < n_caps; i++)
			if (capng_update(CAPNG_ADD,
					 CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
					 caps[i]) < 0)
				return log_error_errno(-EINVAL, "Unknown capability %d", caps[i]);
		int r;
		if (user && uid != 0) {
			if (initgroups(user, gid) < 0)
				return log_error_errno(-errno, "initgroups(%s): %m", user);
			r = capng_change_id((int)uid, (int)gid, CAPNG_CLEAR_BOUNDING);
		} else
			r = capng_apply(CAPNG_SELECT_BOTH);
		if (r < 0)
			return log_error_errno(-EPERM, "Failed to drop capabilities (libcap-ng %d)", r);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return log_error_errno(-errno, "PR_SET_NO_NEW_PRIVS: %m");
	return 0;
}

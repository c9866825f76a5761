/* warren-importd's confinement: it stays root (what it writes into the templates directory must
 * be root's, and the spawner accepts only root's trees) with these capabilities only, its
 * bounding set cut to them and no_new_privs. No seccomp filter: it execs skopeo, umoci (Go) and
 * warren-vm-image (mkfs, cpio), which would inherit one; the parts that read the hostile image run
 * as the import user instead (import-stage.c). */
#include <linux/capability.h>

#include "importd.h"

const char importd_user[] = "warren-import";

const int importd_caps[] = {
	CAP_SETUID, CAP_SETGID, /* the stage child, the clean-up and the kill of leftover processes
				 * become the import user (import-job in main.c) */
	CAP_CHOWN,		/* the stage's work directory and the blob store are handed to it */
	CAP_DAC_READ_SEARCH,	/* the copy reads the stage's tree whatever modes the image gave
				 * (import-copy.c; every entry must be the import user's) */
};
const unsigned importd_n_caps = sizeof importd_caps / sizeof importd_caps[0];

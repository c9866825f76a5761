/* warren-netnsd: the privileged namespace-pool daemon. Builds network namespace slots ahead of
 * time, hands them to the supervisor as fds, starts runsc or a microVM in them through its spawner,
 * and freezes sandboxes' cgroups. Order: spawner fork -> socket -> nftables -> pool -> lock-down.
 */
#include "adopt.h"
#include "agent-protocol.h"
#include "cgroup.h"
#include "fileio.h"
#include "image-layout.h"
#include "log.h"
#include "macro.h"
#include "log-ring.h"
#include "egress.h"
#include "netnsd.h"
#include "notify.h"
#include "privdrop.h"
#include "spawn.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void
usage(void)
{
	printf("Usage: warren-netnsd [OPTIONS]\n"
	       "  --pool-size N        a fixed pool of N namespace slots, all built at start\n"
	       "  --pool-min N         without --pool-size the pool grows and shrinks: slots "
	       "always\n"
	       "                       built (default 8)\n"
	       "  --pool-max N         slots at most (default (RAM - reserve) / slot memory, <= "
	       "4000)\n"
	       "  --pool-spare N       free slots built ahead of creates (default 8)\n"
	       "  --pool-idle-ms MS    free slots beyond min and spare idle this long are taken\n"
	       "                       down (default 60000)\n"
	       "  --pool-slot-mib M    memory a sandbox is counted with (default 16)\n"
	       "  --pool-reserve-mib M memory no create may take (default RAM/16, at least 512):\n"
	       "                       a create that would is refused (HostFull)\n"
	       "  --subnet A.B.0.0     /16 the slots' /30s come from (default 10.201.0.0)\n"
	       "  --ifname-prefix P    host veth names P<N> (default wrn)\n"
	       "  --nft-table T        nftables inet table (default warren)\n"
	       "  --runsc PATH         runsc binary (default /usr/bin/runsc)\n"
	       "  --templates-dir DIR  template root filesystems must be inside (default "
	       "/var/lib/warren/templates)\n"
	       "  --runtime-dir DIR    runsc state and bundles (default /run/warren/netnsd)\n"
	       "  --cgroup-parent P    sandbox cgroups go under P (default /warren)\n"
	       "  --vmm NAME           microVM driver: qemu (default) or firecracker (KVM hosts)\n"
	       "  --qemu PATH          the qemu driver's VMM (default "
	       "/usr/bin/qemu-system-x86_64)\n"
	       "  --firecracker PATH   the firecracker driver's VMM (default "
	       "/usr/bin/firecracker)\n"
	       "  --vm-net user|tap    qemu: user-mode network (default) or a tap in the slot, as\n"
	       "                       firecracker always uses\n"
	       "  --vm-kernel PATH     guest kernel (default " IMAGE_LAYOUT_VM_KERNEL "; "
	       "firecracker:\n"
	       "                       vmlinux, from warren-vm-image --vmlinux)\n"
	       "  --vm-user USER       the VMM drops to this user (default warren-vm)\n"
	       "  --image-store DIR    snapshotd's --store: checkpoints and restores use only "
	       "image\n"
	       "                       directories in it (default /var/lib/warren/images)\n"
	       "  --image-cache DIR    snapshotd's --image-cache: decompressed images restored "
	       "from\n"
	       "                       there too (default /dev/shm/warren-images)\n"
	       "  --vm-console         the guest kernel's messages into each microVM's console\n"
	       "                       log too (console=ttyS0; slower boots)\n"
	       "  --snapshotd-user U   the user whose snapshotd reclaims sandboxes: each "
	       "sandbox's\n"
	       "                       reclaim knob is handed to it (default warren-snapshotd)\n"
	       "  --remove-all         remove every sandbox, slot and the nftables table an "
	       "earlier\n"
	       "                       netnsd with these options left running, then exit (a\n"
	       "                       stopped netnsd leaves its sandboxes for the next one)\n"
	       "  --no-gvisor-agent    gVisor sandboxes run the template's program directly\n"
	       "                       (default: warren-agent goes first, serves E2B's envd API\n"
	       "                       on port " AGENT_PROTO_ENVD_PORT_S
	       " and starts the program; --gvisor-agent)\n"
	       "  --log-size BYTES     each sandbox's console log ring (warrenctl logs;\n"
	       "                       default 262144, at most 16777216)\n" ISOLATION_HELP
		       OCI_LIMITS_HELP DAEMON_COMMON_HELP);
}

static void
spawner_gone(struct ipc_client *c, void *ud)
{
	log_error("The spawner died; exiting so netnsd is restarted whole");
	exit(1);
}

int
main(int argc, char **argv)
{
	static struct netnsd n;
	daemon_common_init(&n.dc, "netnsd");
	n.slots_fd = -1;
	unsigned want_size = 0;
	bool remove_all = false;
	size_t log_ring_size = 0;
	bool gvisor_agent = true;
	const char *subnet = "10.201.0.0", *prefix = "wrn", *table = "warren";
	const char *templates = "/var/lib/warren/templates", *runtime = "/run/warren/netnsd";
	n.runsc = "/usr/bin/runsc";
	/* snapshotd's store and cache: the spawner proves every image directory is in one */
	struct image_proof_roots images = {.store = "/var/lib/warren/images",
					   .cache = "/dev/shm/warren-images"};
	n.cgroup_parent = "/warren";
	const char *snapshotd_user = "warren-snapshotd";
	n.vm = (struct microvm_config){.vmm = "qemu",
				       .qemu = "/usr/bin/qemu-system-x86_64",
				       .firecracker = "/usr/bin/firecracker",
				       .kernel = NULL,
				       .vm_user = "warren-vm"};
	static const struct option opts[] = {{"pool-size", required_argument, NULL, 'p'},
					     {"pool-min", required_argument, NULL, 0x310},
					     {"pool-max", required_argument, NULL, 0x311},
					     {"pool-spare", required_argument, NULL, 0x312},
					     {"pool-idle-ms", required_argument, NULL, 0x313},
					     {"pool-slot-mib", required_argument, NULL, 0x314},
					     {"pool-reserve-mib", required_argument, NULL, 0x315},
					     {"subnet", required_argument, NULL, 's'},
					     {"ifname-prefix", required_argument, NULL, 'i'},
					     {"nft-table", required_argument, NULL, 'n'},
					     {"runsc", required_argument, NULL, 'r'},
					     {"templates-dir", required_argument, NULL, 't'},
					     {"runtime-dir", required_argument, NULL, 'd'},
					     {"cgroup-parent", required_argument, NULL, 'c'},
					     {"vmm", required_argument, NULL, 'M'},
					     {"qemu", required_argument, NULL, 'Q'},
					     {"firecracker", required_argument, NULL, 'F'},
					     {"vm-net", required_argument, NULL, 'N'},
					     {"vm-kernel", required_argument, NULL, 'K'},
					     {"vm-user", required_argument, NULL, 'U'},
					     {"vm-ram-dir", required_argument, NULL, 'R'},
					     {"image-store", required_argument, NULL, 'S'},
					     {"image-cache", required_argument, NULL, 'I'},
					     {"vm-console", no_argument, NULL, 'C'},
					     {"snapshotd-user", required_argument, NULL, 'D'},
					     {"remove-all", no_argument, NULL, 'X'},
					     {"log-size", required_argument, NULL, 0x300},
					     {"gvisor-agent", no_argument, NULL, 0x301},
					     {"no-gvisor-agent", no_argument, NULL, 0x302},
					     {"help", no_argument, NULL, 'h'},
					     ISOLATION_OPTIONS,
					     OCI_LIMITS_OPTIONS,
					     DAEMON_COMMON_OPTIONS,
					     {}};
	static struct isolation_config iso;
	static struct oci_limits limits = OCI_LIMITS_DEFAULT;
	/* the dynamic pool's options, -1 when not given */
	long long pool_opt[6] = {-1, -1, -1, -1, -1, -1};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&n.dc, c, optarg);
		if (r == 0)
			r = isolation_option(&iso, c, optarg);
		if (r == 0)
			r = oci_spec_limits_option(&limits, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 'p':
			want_size = (unsigned)atoi(optarg);
			break;
		case 0x310 ... 0x315: {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 100000000) {
				log_error("Bad %s %s", opts[c - 0x310 + 1].name, optarg);
				return 2;
			}
			pool_opt[c - 0x310] = v;
			break;
		}
		case 's':
			subnet = optarg;
			break;
		case 'i':
			prefix = optarg;
			break;
		case 'n':
			table = optarg;
			break;
		case 'r':
			n.runsc = optarg;
			break;
		case 't':
			templates = optarg;
			break;
		case 'd':
			runtime = optarg;
			break;
		case 'c':
			if (!cgroup_parent_valid(optarg)) {
				log_error("Bad --cgroup-parent %s (an absolute cgroup path, short "
					  "enough for /<sandbox id>)",
					  optarg);
				return 2;
			}
			n.cgroup_parent = optarg;
			break;
		case 'M':
			n.vm.vmm = optarg;
			break;
		case 'Q':
			n.vm.qemu = optarg;
			break;
		case 'F':
			n.vm.firecracker = optarg;
			break;
		case 'N':
			if (strcmp(optarg, "user") && strcmp(optarg, "tap")) {
				log_error("--vm-net is user or tap");
				return 2;
			}
			n.vm.tap = !strcmp(optarg, "tap");
			break;
		case 'K':
			n.vm.kernel = optarg;
			break;
		case 'U':
			n.vm.vm_user = optarg;
			break;
		case 'R':
			/* 0.2.0 kept guest RAM in files there, a predictable name in a
			 * world-writable directory; RAM is anonymous memory (memfd) now */
			log_warning("--vm-ram-dir is ignored: guest RAM is anonymous memory");
			break;
		case 'S':
			images.store = optarg;
			break;
		case 'I':
			images.cache = optarg;
			break;
		case 'C':
			n.vm.console = true;
			break;
		case 'D':
			snapshotd_user = optarg;
			break;
		case 'X':
			remove_all = true;
			break;
		case 0x301:
			gvisor_agent = true;
			break;
		case 0x302:
			gvisor_agent = false;
			break;
		case 0x300: {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || v < 4096 || v > LOG_RING_MAX) {
				log_error("Bad --log-size %s (4096-%u bytes)", optarg,
					  LOG_RING_MAX);
				return 2;
			}
			log_ring_size = (size_t)v;
			break;
		}
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	struct in_addr sub;
	if (inet_pton(AF_INET, subnet, &sub) != 1 || strlen(prefix) > 8 || want_size > 4000) {
		log_error("Bad --subnet, --ifname-prefix or --pool-size");
		return 2;
	}
	/* --pool-size keeps its fixed meaning (tests, warren-launch setups); otherwise the pool
	 * follows demand between min and max (pool-policy.h) */
	static struct pool_policy policy;
	bool dynamic_opts = false;
	for (int i = 0; i < 6; i++)
		dynamic_opts |= pool_opt[i] >= 0;
	if (want_size && dynamic_opts) {
		log_error("--pool-size is a fixed pool: it goes with none of the --pool-min, -max, "
			  "-spare, -idle-ms, -slot-mib, -reserve-mib options");
		return 2;
	}
	if (want_size) {
		pool_policy_fixed(&policy, want_size);
	} else {
		uint64_t mem = 0;
		meminfo_bytes("MemTotal", &mem);
		pool_policy_defaults(&policy, mem, ADOPT_MAX_SLOTS);
		if (pool_opt[0] >= 0)
			policy.min = (unsigned)pool_opt[0];
		if (pool_opt[1] >= 0)
			policy.max = (unsigned)pool_opt[1];
		if (pool_opt[2] >= 0)
			policy.spare = (unsigned)pool_opt[2];
		if (pool_opt[3] >= 0)
			policy.idle_ms = (unsigned)pool_opt[3];
		if (pool_opt[4] >= 0)
			policy.slot_bytes = (uint64_t)pool_opt[4] << 20;
		if (pool_opt[5] >= 0)
			policy.reserve_bytes = (uint64_t)pool_opt[5] << 20;
		char why[200];
		if (policy.max > ADOPT_MAX_SLOTS) {
			log_error("--pool-max %u is above %u", policy.max, ADOPT_MAX_SLOTS);
			return 2;
		}
		if (pool_policy_check(&policy, why, sizeof why) < 0) {
			log_error("Bad pool options: %s", why);
			return 2;
		}
	}
	if (!n.vm.kernel)
		n.vm.kernel = !strcmp(n.vm.vmm, "firecracker") ? IMAGE_LAYOUT_VM_KERNEL_ELF
							       : IMAGE_LAYOUT_VM_KERNEL;
	if (microvm_configure(&n.vm) < 0) {
		log_error("Unknown --vmm %s (qemu or firecracker)", n.vm.vmm);
		return 2;
	}
	if (n.dc.dump_seccomp)
		return daemon_lock_down(&n.dc, NULL, NULL, 0, &netnsd_seccomp) < 0;
	if (geteuid() != 0 && !n.dc.seccomp_probe) {
		log_error("warren-netnsd must start as root (it keeps CAP_NET_ADMIN and "
			  "CAP_SYS_ADMIN)");
		return 1;
	}
	mkdir_p(runtime, 0700);
	mkdir_p(templates, 0755);
	n.templates_dir = realpath(templates, NULL);
	char cidr[32];
	snprintf(cidr, sizeof cidr, "%s/16", subnet);
	iso.table = table;
	iso.ifname_prefix = prefix;
	iso.subnet_cidr = cidr;
	iso.runtime_dir = runtime;
	if (isolation_finish(&iso) < 0)
		return 2;

	if (remove_all)
		return netnsd_remove_all(runtime, n.cgroup_parent, prefix, &iso) < 0;

	/* Restart without loss: the previous spawner holds the runtime directory's lock until its
	 * last command is done; then what it left is checked and adopted (adopt.h). */
	static struct adoption adoption;
	int lock_fd = -1;
	if (!n.dc.seccomp_probe) {
		lock_fd = adopt_lock(runtime, 120000);
		if (lock_fd < 0)
			return log_error_errno(lock_fd,
					       "Cannot lock %s/lock (the runtime directory must be "
					       "root's and writable by root only, reached without "
					       "symlinks): %m",
					       runtime),
			       1;
		struct adopt_config ac = {.runtime_dir = runtime,
					  .cgroup_parent = n.cgroup_parent,
					  .ifname_prefix = prefix};
		if (adopt_scan(&ac, &adoption) < 0)
			return 1;
		unsigned size = policy.max;
		for (size_t i = 0; i < adoption.n; i++)
			if (adoption.items[i].slot >= size)
				size = adoption.items[i].slot + 1;
		want_size = size;
		if (policy.min ==
		    policy.max) /* a fixed pool builds the adopted slots' table whole */
			pool_policy_fixed(&policy, size);
		n.slots_fd = adopt_slots_open(runtime, size, &adoption);
		if (n.slots_fd < 0)
			return log_error_errno(n.slots_fd, "Cannot open %s/slots: %m", runtime), 1;
		for (size_t i = 0; i < adoption.n; i++) {
			struct netnsd_sandbox *sb = calloc(1, sizeof *sb);
			if (!sb)
				return log_error_errno(-ENOMEM, "Adopting sandboxes: %m"), 1;
			snprintf(sb->id, sizeof sb->id, "%s", adoption.items[i].id);
			sb->slot = adoption.items[i].slot;
			sb->pid = adoption.items[i].pid;
			sb->vm = adoption.items[i].vm;
			sb->next = n.sandboxes;
			n.sandboxes = sb;
		}
	}

	n.dc.base = event_base_new();
	pid_t spawner_pid = 0;
	static struct spawner_config sc;
	sc = (struct spawner_config){.runsc = n.runsc,
				     .runtime_dir = runtime,
				     .cgroup_parent = n.cgroup_parent,
				     .templates_dir = n.templates_dir,
				     .isolation = &iso,
				     .limits = &limits,
				     .vm = &n.vm,
				     .images = images,
				     .freezer_uid = (uid_t)-1,
				     .reclaim_uid = (uid_t)-1,
				     .adopt = &adoption,
				     .lock_fd = lock_fd,
				     .log_ring_size = log_ring_size,
				     .gvisor_agent = gvisor_agent};
	/* the spawner hands each sandbox's freezer knob to netnsd and its reclaim knob to
	 * snapshotd, so neither keeps CAP_DAC_OVERRIDE for runsc's root-owned files */
	gid_t knob_gid;
	if (privdrop_lookup_user(netnsd_user, &sc.freezer_uid, &knob_gid) < 0) {
		sc.freezer_uid = (uid_t)-1;
		log_warning("No user %s: sandbox freezers stay root's", netnsd_user);
	}
	if (privdrop_lookup_user(snapshotd_user, &sc.reclaim_uid, &knob_gid) < 0) {
		sc.reclaim_uid = (uid_t)-1;
		log_warning("No user %s: sandbox reclaim knobs stay root's", snapshotd_user);
	}
	int spawner_fd = -1;
	if (!n.dc.seccomp_probe) {
		spawner_fd = spawner_start(&sc, &spawner_pid);
		if (spawner_fd < 0)
			return log_error_errno(spawner_fd, "Failed to start the spawner: %m"), 1;
	}
	int lfd = daemon_listen(&n.dc);
	if (lfd < 0)
		return 1;
	if (!n.dc.seccomp_probe) {
		/* the allow-lists of the sandboxes that lived through the restart are in force
		 * from the table's first moment (egress.h); their slots keep their link group */
		bool *listed = calloc(want_size ? want_size : policy.max, sizeof *listed);
		char *extra = NULL;
		size_t extra_len = 0;
		FILE *ef = listed ? open_memstream(&extra, &extra_len) : NULL;
		if (!ef)
			return log_error_errno(-ENOMEM, "Egress records: %m"), 1;
		egress_restore(&iso, &adoption, ef, listed, want_size ? want_size : policy.max);
		fclose(ef);
		int ir = isolation_install(&iso, extra);
		free(extra);
		if (ir < 0)
			return 1;
		struct pool_config pc = {.size = want_size ? want_size : policy.max,
					 .policy = policy,
					 .subnet = sub.s_addr,
					 .ifname_prefix = prefix,
					 .adopt = &adoption,
					 .slots_fd = n.slots_fd};
		int r = pool_new(n.dc.base, &pc, netnsd_pool_available, &n, &n.pool);
		if (r < 0)
			return log_error_errno(r, "Failed to set up the pool: %m"), 1;
		for (unsigned i = 0; i < pc.size; i++) {
			struct slot *sl = pool_slot(n.pool, i);
			if (listed[i] && sl)
				sl->egress_list = true;
			else if (listed[i]) {
				/* adopted, then not taken over by the pool: its slot is built
				 * anew, so its chain goes now (still root, before lock-down) */
				struct egress_policy off = {.mode = EGRESS_OFF};
				egress_apply(&iso, i, &off);
			}
		}
		free(listed);
		/* the pool and the spawner hold what they need; the claimed bytes stay for the
		 * pool's build */
		for (size_t i = 0; i < adoption.n; i++) {
			adoption.items[i].pidfd = safe_close(adoption.items[i].pidfd);
			adoption.items[i].nsfd = safe_close(adoption.items[i].nsfd);
		}
	}
	if (daemon_lock_down(&n.dc, netnsd_user, netnsd_caps, netnsd_n_caps, &netnsd_seccomp) < 0)
		return 1;

	n.spawner = ipc_client_new(n.dc.base, "spawner", netnsd_spawner_event, spawner_gone, &n);
	/* The spawner link is a socketpair made before the fork. */
	ipc_client_attach_fd(n.spawner, spawner_fd);
	struct ipc_server_config cfg = {.name = "netnsd",
					.table = netnsd_handlers,
					.n_table = netnsd_n_handlers,
					.allowed_uids = n.dc.peer_uids,
					.n_allowed_uids = n.dc.n_peer_uids,
					.drop_on_violation = true,
					.on_peer_gone = netnsd_peer_gone,
					.userdata = &n};
	n.server = ipc_server_new(n.dc.base, lfd, &cfg);
	ipc_server_set_ready(n.server, true);
	notify_send("READY=1\nSTATUS=namespace pool filling");
	log_info("Ready on %s (pool %u, spawner pid %d)",
		 n.dc.socket_path ? n.dc.socket_path : "fd 3", pool_size(n.pool), (int)spawner_pid);
	daemon_run(&n.dc);
	ipc_server_free(n.server);
	pool_free(n.pool);
	/* Closing the link makes the spawner finish its commands and exit; the sandboxes, their
	 * slots and the nftables table stay for the next netnsd (--remove-all removes them). */
	ipc_client_free(n.spawner);
	return 0;
}

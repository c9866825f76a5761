/* Per-slot egress allow-lists (egress.h): the chain of a slot, its record, and their reload
 * after a restart. Runs in the spawner (egress_apply) and in netnsd before its lock-down
 * (egress_restore). Every policy is parsed again here from text (common/egress-policy.c): what
 * reaches nft is only numbers this file printed. */
#include "egress.h"
#include "fileio.h"
#include "log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
record_path(const struct isolation_config *c, unsigned slot, char *buf, size_t size)
{
	snprintf(buf, size, "%s/egress/%u", c->runtime_dir, slot);
}

void
egress_slot_script(FILE *f, const struct isolation_config *c, unsigned slot,
		   const struct egress_policy *p)
{
	const char *T = c->table;
	/* "add" of the chain and the element succeeds whether or not they exist (nft 1.0 has no
	 * "destroy"), so the commands that follow never fail on a slot in another state */
	fprintf(f, "add chain inet %s egress_%u\n", T, slot);
	fprintf(f, "flush chain inet %s egress_%u\n", T, slot);
	if (p->mode != EGRESS_LIST) {
		fprintf(f,
			"add element inet %1$s egress_slots { \"%2$s%3$u\" : jump egress_%3$u }\n",
			T, c->ifname_prefix, slot);
		fprintf(f, "delete element inet %s egress_slots { \"%s%u\" }\n", T,
			c->ifname_prefix, slot);
		fprintf(f, "delete chain inet %s egress_%u\n", T, slot);
		return;
	}
	for (size_t i = 0; i < p->n && i < EGRESS_MAX_ENTRIES; i++) {
		char a[INET_ADDRSTRLEN];
		struct in_addr in = {p->e[i].addr};
		inet_ntop(AF_INET, &in, a, sizeof a);
		if (!p->e[i].port) {
			fprintf(f, "add rule inet %s egress_%u ip daddr %s/%u accept\n", T, slot, a,
				p->e[i].prefix);
			continue;
		}
		/* a port is TCP's and UDP's (QUIC, DNS): both, nothing else */
		for (int k = 0; k < 2; k++)
			fprintf(f, "add rule inet %s egress_%u ip daddr %s/%u %s dport %u accept\n",
				T, slot, a, p->e[i].prefix, k ? "udp" : "tcp", p->e[i].port);
	}
	/* the rest of the world, IPv6 included, and the deny list's ranges nobody listed */
	fprintf(f, "add rule inet %s egress_%u drop\n", T, slot);
	fprintf(f, "add element inet %1$s egress_slots { \"%2$s%3$u\" : jump egress_%3$u }\n", T,
		c->ifname_prefix, slot);
}

static int
run_script(const struct isolation_config *c, unsigned slot, const struct egress_policy *p)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return -ENOMEM;
	egress_slot_script(f, c, slot, p);
	fclose(f);
	int r = nft_run(s);
	if (r < 0)
		log_error("nftables script was:\n%s", s);
	free(s);
	return r;
}

int
egress_apply(const struct isolation_config *c, unsigned slot, const struct egress_policy *p)
{
	char dir[512], path[560], text[EGRESS_POLICY_MAX];
	snprintf(dir, sizeof dir, "%s/egress", c->runtime_dir);
	record_path(c, slot, path, sizeof path);
	int r;
	if (p->mode == EGRESS_LIST) {
		/* the record before the chain: a restart between them loads the chain */
		if ((r = egress_policy_format(p, text, sizeof text)) < 0)
			return r;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return log_error_errno(-errno, "Cannot make %s: %m", dir);
		size_t n = strlen(text);
		text[n++] = '\n';
		if ((r = file_write_atomic(path, text, n, 0600, true)) < 0)
			return log_error_errno(r, "Slot %u: cannot write %s: %m", slot, path);
		if ((r = run_script(c, slot, p)) < 0)
			return log_error_errno(r, "Slot %u: loading its egress chain failed: %m",
					       slot);
		return 0;
	}
	/* the chain before the record: a restart between them has no chain to load */
	if ((r = run_script(c, slot, p)) < 0)
		return log_error_errno(r, "Slot %u: removing its egress chain failed: %m", slot);
	if (unlink(path) < 0 && errno != ENOENT)
		return log_error_errno(-errno, "Slot %u: cannot remove %s: %m", slot, path);
	return 0;
}

static bool
adopted_slot(const struct adoption *a, unsigned slot)
{
	for (size_t i = 0; a && i < a->n; i++)
		if (a->items[i].slot == slot)
			return true;
	return false;
}

void
egress_restore(const struct isolation_config *c, const struct adoption *a, FILE *f, bool *listed,
	       unsigned n_listed)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/egress", c->runtime_dir);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[800];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		char *end;
		unsigned long slot = strtoul(de->d_name, &end, 10);
		if (*end || !de->d_name[0] || slot >= n_listed ||
		    !adopted_slot(a, (unsigned)slot)) {
			/* its sandbox did not live through the restart: the slot is rebuilt */
			unlink(path);
			continue;
		}
		char text[EGRESS_POLICY_MAX + 2] = "", why[200];
		struct egress_policy p;
		if (file_read_line(path, text, sizeof text) < 0 ||
		    egress_policy_parse(text, &p, why, sizeof why) < 0 || p.mode != EGRESS_LIST) {
			/* never wider than the policy was: nothing leaves until it is set again */
			log_warning("Slot %u: egress record %s unreadable or not valid; the slot's "
				    "egress is blocked",
				    (unsigned)slot, path);
			p = (struct egress_policy){.mode = EGRESS_LIST};
		}
		egress_slot_script(f, c, (unsigned)slot, &p);
		listed[slot] = true;
		log_info("Slot %u: egress allow-list loaded again", (unsigned)slot);
	}
	closedir(d);
}

/* Sandboxes' egress policies (sandbox-egress.c, supervisor): the CreateSandbox and AddTemplate
 * option, the SetEgress method and Egress property of a Sandbox, and the record a restarted
 * supervisor reads back. netnsd enforces them (and checks them again). */
#pragma once
#include <stddef.h>
#include <systemd/sd-bus.h>

#include "egress-policy.h"

struct supervisor;
struct sandbox;
struct template;

#define EGRESS_DIR "egress"
#define EGRESS_TAG_DIR "egress-tags"

/* A D-Bus option's value (v of s) as a canonical policy into out: 0, or <0 with err set
 * (InvalidArgument, with the parser's reason). */
int sandbox_egress_option(sd_bus_message *m, const char *key, char *out, size_t size,
			  sd_bus_error *err);
/* The CreateSandbox option egress_within_template: egress (canonical) may not reach anything
 * t's policy does not (egress_policy_within), checked with the template the create uses, not a
 * copy the caller read before (the E2B control plane asks for it: an API key holder narrows
 * the operator's choice, never widens it). 0, or an InvalidArgument error. */
int sandbox_egress_within_template(const char *egress, const struct template *t, sd_bus_error *err);
/* A template's default: its egress option, else allow_outbound's on or off. */
const char *sandbox_egress_of_template(const struct template *t);
/* The policy a new sandbox of t starts with: m's egress option when m is a CreateSandbox that
 * has one (read again here, after method_create_sandbox checked it), else t's default. True
 * when m named one that differs from t's (a warm create then takes no standby, which has t's). */
bool sandbox_egress_for_create(sd_bus_message *m, const struct template *t, char *out, size_t size);
/* A tag's policy, its sandbox's when the image was sealed (<state-dir>/egress-tags/<tag>): a
 * fork or branch child starts with it, never with its template's default, which may be more
 * open than what its parent was set to. _of_tag: false when the tag has no (valid) record
 * (the child then starts with "off": sandbox.c). */
void sandbox_egress_tag_record(const char *tag, const char *policy);
bool sandbox_egress_of_tag(const char *tag, char *out, size_t size);
void sandbox_egress_tag_remove(const char *tag);
/* <state-dir>/egress/<id>: written when a sandbox is created and when its policy changes. */
void sandbox_egress_record(const struct sandbox *sb);
/* At start, after sandboxes_load: each known sandbox's policy; records of others go. */
void sandbox_egress_load(struct supervisor *s);
/* The sandbox is gone for good (sandbox_hooks.forgotten): its record goes. */
void sandbox_egress_forget(const struct sandbox *sb);
/* SetEgress (the caller checked the owner): policy checked and made canonical, sent to netnsd;
 * m is answered when netnsd has applied it (the new policy holds for new connections; conntrack
 * keeps those already open, as any firewall). 1, or <0 with err set. */
int sandbox_egress_set(struct sandbox *sb, const char *policy, sd_bus_message *m,
		       sd_bus_error *err);
/* The Egress property: the sandbox's policy, or its template's for one from before them. */
const char *sandbox_egress_of(const struct sandbox *sb);

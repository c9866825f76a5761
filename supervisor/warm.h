/* Warm templates (warm.c, supervisor, a feature): creates that restore an image of the started
 * app, and the standby sandboxes kept restored ahead. */
#pragma once
#include "supervisor.h"

int warm_create(struct supervisor *s, sd_bus_message *m, struct template *t, const char *backend,
		uint32_t pool_timeout_ms, uint32_t start_timeout_ms, bool wait);
void warm_sandbox_ready(struct sandbox *sb);
void warm_done(const char *template_name, const char *backend, bool ok);
void warm_tag(const char *template_name, const char *backend, char *tag, size_t size);
struct template *warm_tag_owner(const char *tag);

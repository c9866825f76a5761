/* Prometheus text exposition helpers (see prom.h). Runs in the gateway and the supervisor. */
#include "prom.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double prom_buckets[PROM_N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
					     1,	    2.5,  5,	 10,   30,  60,	  120};

void
prom_hist_observe(struct prom_hist *h, uint64_t usec)
{
	double s = (double)usec / 1e6;
	size_t i = 0;
	while (i < PROM_N_BUCKETS && s > prom_buckets[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += s;
}

void
prom_buf_free(struct prom_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static bool
prom_reserve(struct prom_buf *b, size_t n)
{
	if (b->failed)
		return false;
	if (b->max && b->len + n > b->max) {
		b->failed = true;
		return false;
	}
	if (b->len + n + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->failed = true;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

void
prom_append(struct prom_buf *b, const void *p, size_t n)
{
	if (!prom_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void
prom_printf(struct prom_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if ((size_t)k < sizeof small) {
		prom_append(b, small, (size_t)k);
		return;
	}
	if (!prom_reserve(b, (size_t)k))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)k + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)k;
}

void
prom_escape(struct prom_buf *b, const char *value)
{
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if (*p == '\\')
			prom_append(b, "\\\\", 2);
		else if (*p == '"')
			prom_append(b, "\\\"", 2);
		else if (*p == '\n')
			prom_append(b, "\\n", 2);
		else if (*p < 0x20 || *p == 0x7f)
			prom_append(b, "?", 1);
		else
			prom_append(b, p, 1);
	}
}

void
prom_header(struct prom_buf *b, const char *name, const char *type, const char *help)
{
	prom_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
prom_sample_u64(struct prom_buf *b, const char *name, const char *labels, uint64_t v)
{
	prom_printf(b, "%s%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		    (unsigned long long)v);
}

void
prom_sample_double(struct prom_buf *b, const char *name, const char *labels, double v)
{
	prom_printf(b, "%s%s%s%s %.9g\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		    v);
}

void
prom_hist_write(struct prom_buf *b, const char *name, const char *labels, const struct prom_hist *h)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";
	for (size_t i = 0; i < PROM_N_BUCKETS; i++) {
		cum += h->counts[i];
		prom_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
			    prom_buckets[i], (unsigned long long)cum);
	}
	prom_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		    (unsigned long long)h->count);
	prom_printf(b, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels,
		    labels[0] ? "}" : "", h->sum);
	prom_printf(b, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
		    labels[0] ? "}" : "", (unsigned long long)h->count);
}

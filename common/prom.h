/* Prometheus text exposition (format 0.0.4) for the metrics endpoint: a growable text buffer,
 * label values escaped, fixed-bucket histograms. Used by the gateway (its own metrics) and the
 * supervisor (its part, pushed to the gateway on a scrape). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds; the same buckets for every latency histogram, from a thaw (ms) to a fork of 100
 * (tens of seconds). */
#define PROM_N_BUCKETS 14
extern const double prom_buckets[PROM_N_BUCKETS];

struct prom_hist {
	uint64_t counts[PROM_N_BUCKETS + 1]; /* per bucket (not cumulative); last: above all */
	uint64_t count;
	double sum; /* seconds */
};

void prom_hist_observe(struct prom_hist *h, uint64_t usec);

/* Text that grows; a failed allocation makes it failed (the rest is dropped). */
struct prom_buf {
	char *data;
	size_t len, cap;
	size_t max; /* 0: no bound; beyond it the buffer is failed */
	bool failed;
};

void prom_buf_free(struct prom_buf *b);
void prom_printf(struct prom_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void prom_append(struct prom_buf *b, const void *p, size_t n);
/* A label value as the format wants it: backslash, double quote and newline escaped; any other
 * control character (never in Warren's ids, names or states, but a value may come from
 * elsewhere) becomes '?'. */
void prom_escape(struct prom_buf *b, const char *value);
/* # HELP and # TYPE lines. */
void prom_header(struct prom_buf *b, const char *name, const char *type, const char *help);
/* name{labels} value; labels is "" or a pre-escaped `k="v",...` list. */
void prom_sample_u64(struct prom_buf *b, const char *name, const char *labels, uint64_t v);
void prom_sample_double(struct prom_buf *b, const char *name, const char *labels, double v);
/* The _bucket (cumulative, le=), _sum and _count series of h under labels. */
void prom_hist_write(struct prom_buf *b, const char *name, const char *labels,
		     const struct prom_hist *h);

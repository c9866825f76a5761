/* The header of a tag image ("warren-image" in <store>/<tag>/): pure parse and check, no I/O,
 * so the fuzzer and the unit tests link it alone (snapshotd). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"

#define IMAGE_HEADER_NAME "warren-image"
/* 2: each file's checksum is XXH3-64 (xxhash); 1 (read, never written): FNV-1a 64 */
#define IMAGE_HEADER_FORMAT 2
#define IMAGE_HEADER_FORMAT_FNV 1
#define IMAGE_HEADER_MAX_BYTES 16384 /* a header lists a few files: anything bigger is not one */
#define IMAGE_MAX_FILES 64
#define IMAGE_FILE_NAME_MAX 64

struct image_file {
	char name[IMAGE_FILE_NAME_MAX + 1];
	uint64_t size, hash;
};

struct image_header {
	unsigned format; /* IMAGE_HEADER_FORMAT, or _FNV for an image of an earlier version */
	uint64_t created_usec;
	char parent[SANDBOX_ID_LEN + 1]; /* "" or a sandbox id */
	char template_name[33];		 /* "" or a template name */
	const char *backend;		 /* "gvisor" or "microvm" (static) */
	bool compressed;
	size_t n_files;
	struct image_file files[IMAGE_MAX_FILES];
};

/* A member of an image: [A-Za-z0-9_-][A-Za-z0-9._-]{0,63} (what runsc and the VMMs write, and
 * their .zst); never ".", "..", a hidden name or the header itself. */
bool image_file_name_valid(const char *name);
/* Parse len bytes of a header. Every key known and at most once (file= repeated, up to
 * IMAGE_MAX_FILES, each name once), every value checked; -EBADMSG otherwise (why says which
 * line, when given). */
int image_header_parse(const char *buf, size_t len, struct image_header *h, char *why,
		       size_t whylen);

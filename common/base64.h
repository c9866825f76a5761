/* Base64 (common/base64.c): standard alphabet, padded on output; decoding accepts the standard
 * or URL-safe alphabet, with or without padding. libc only (the static agent links it). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The encoded length of n bytes, without the NUL. */
size_t base64_len(size_t n);
/* out must hold base64_len(n) + 1 bytes; returns the length written (NUL-terminated). */
size_t base64_encode(const uint8_t *in, size_t n, char *out);
/* Returns the bytes written, or -EINVAL for a bad character or too little room. */
ssize_t base64_decode(const char *in, size_t n, uint8_t *out, size_t out_size);

/* libFuzzer harness: snapshotd's image header parser (snapshotd/image-header.c). What must
 * hold beyond no crash: whatever it accepts is what image_read then trusts (file names that
 * stay in the image directory, a known backend and format, valid parent and template). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "image-header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct image_header h;
	char why[128];
	if (image_header_parse((const char *)data, size, &h, why, sizeof why) < 0)
		return 0;
	if (h.n_files == 0 || h.n_files > IMAGE_MAX_FILES)
		__builtin_trap();
	for (size_t i = 0; i < h.n_files; i++)
		if (!image_file_name_valid(h.files[i].name) || strchr(h.files[i].name, '/'))
			__builtin_trap();
	if (backend_from_string(h.backend) < 0)
		__builtin_trap();
	/* the checksum's algorithm follows the format: only the two known ones */
	if (h.format != IMAGE_HEADER_FORMAT && h.format != IMAGE_HEADER_FORMAT_FNV)
		__builtin_trap();
	if ((h.parent[0] && !sandbox_id_valid(h.parent)) ||
	    (h.template_name[0] && !template_name_valid(h.template_name)))
		__builtin_trap();
	return 0;
}

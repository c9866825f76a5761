/* snapshotd's image store: /var/lib/warren/images, opened once as a directory fd so every later
 * access is relative to it (no path from a request ever leaves the store). */
#include "snapshotd.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

int
store_open(const char *dir)
{
	int r = mkdir_p(dir, 0700);
	if (r < 0)
		return log_error_errno(r, "Cannot create the image store %s: %m", dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "Cannot open the image store %s: %m", dir);
	return fd;
}

int
store_list(struct snapshotd *s, Warren__V1__ListImagesResponse *out)
{
	warren__v1__list_images_response__init(out);
	int fd = dup(s->store_fd);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		/* temporary names (".tmp.") are images being written: not images yet */
		if (de->d_name[0] == '.')
			continue;
		Warren__V1__ImageInfo *info = malloc(sizeof *info);
		if (!info) {
			closedir(d);
			store_list_free(out);
			return -ENOMEM;
		}
		if (image_read(s, de->d_name, false, info, NULL) < 0) {
			image_info_free(info);
			free(info);
			continue;
		}
		Warren__V1__ImageInfo **grown =
			realloc(out->images, (out->n_images + 1) * sizeof *out->images);
		if (!grown) {
			image_info_free(info);
			free(info);
			closedir(d);
			store_list_free(out);
			return -ENOMEM;
		}
		out->images = grown;
		out->images[out->n_images++] = info;
	}
	closedir(d);
	return 0;
}

void
store_list_free(Warren__V1__ListImagesResponse *out)
{
	for (size_t i = 0; i < out->n_images; i++) {
		image_info_free(out->images[i]);
		free(out->images[i]);
	}
	free(out->images);
}

/*
 * errno_at_start.c - with tlmalloc preloaded, main() finds errno 0, as the
 * C standard promises at program start-up: the library's start-up (the
 * shadow pages for statics, most of whose mappings fail with EEXIST) must
 * leave no error behind.  Also checks that malloc is tlmalloc's, so a run
 * without the preload cannot pass.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	int at_start = errno;	/* first, before any call */
	Dl_info info;
	void *(*m)(size_t) = malloc;

	if (dladdr((void *)m, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, "libtlmalloc") == NULL) {
		fprintf(stderr, "malloc is not tlmalloc's (%s)\n",
			info.dli_fname ? info.dli_fname : "?");
		return 1;
	}
	if (at_start != 0) {
		fprintf(stderr, "errno at the top of main: %d (%s)\n",
			at_start, strerror(at_start));
		return 1;
	}
	printf("errno 0 at start, malloc from %s\n", info.dli_fname);
	return 0;
}

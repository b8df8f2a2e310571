/*
 * malloc_replaced.c - a program that knows nothing of tlmalloc, run with
 * the library preloaded (LD_PRELOAD, or the launcher): its allocator and
 * the C library's own allocations are tlmalloc's.
 *
 * The library must be loaded (tl_usable_size found with dlsym), malloc
 * must resolve into it (dladdr), and the blocks of malloc, strdup and
 * getline (allocated inside the C library) must be tlmalloc's:
 * tl_usable_size aborts on a block it did not hand out.  Prints
 * "malloc replaced" and exits 0; exits 1 with the reason otherwise.
 * Under musl's dynamic loader this is the check that musl lets a
 * preloaded library replace its allocator.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	return 1;
}

int main(void)
{
	size_t (*usable)(const void *);
	void *(*m)(size_t) = malloc;
	Dl_info info;

	*(void **)&usable = dlsym(RTLD_DEFAULT, "tl_usable_size");
	if (usable == NULL)
		return fail("libtlmalloc is not loaded (no tl_usable_size)");
	if (dladdr((void *)m, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, "libtlmalloc") == NULL)
		return fail("malloc does not resolve into libtlmalloc");

	char *p = malloc(100);
	char *s = strdup("a string the C library copies");
	if (p == NULL || s == NULL)
		return fail("malloc or strdup returned NULL");
	if (usable(p) < 100 || usable(s) < strlen(s) + 1)
		return fail("usable size too small");

	static char text[] = "a line\n";
	FILE *f = fmemopen(text, sizeof(text) - 1, "r");
	char *line = NULL;
	size_t size = 0;
	if (f == NULL || getline(&line, &size, f) != 7)
		return fail("getline");
	if (usable(line) < size)
		return fail("getline's buffer: usable size too small");
	free(line);
	fclose(f);
	free(s);
	free(p);
	puts("malloc replaced");
	return 0;
}

/*
 * malloc_replaced.c - a program that knows nothing of tlmalloc, run with
 * the library preloaded (LD_PRELOAD, or the launcher): its allocator and
 * the C library's own allocations are tlmalloc's.
 *
 * The library must be loaded (tl_usable_size found with dlsym), malloc
 * must resolve into it (dladdr), and the blocks of malloc, strdup and
 * getline (allocated inside the C library) must be tlmalloc's:
 * tl_usable_size aborts on a block it did not hand out.  Against glibc,
 * so must the blocks of glibc's own entry points (__libc_malloc, ...),
 * which a program may call by name: freed with free, and free's blocks
 * with __libc_free.  Prints
 * "malloc replaced" and exits 0; exits 1 with the reason otherwise.
 * Under musl's dynamic loader this is the check that musl lets a
 * preloaded library replace its allocator.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
void *__libc_malloc(size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void __libc_free(void *ptr);
#endif

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
#if defined(__GLIBC__)
	char *g = __libc_malloc(100), *a = __libc_memalign(256, 100);
	if (g == NULL || a == NULL || (size_t)a % 256 != 0)
		return fail("__libc_malloc or __libc_memalign");
	if (usable(g) < 100 || usable(a) < 100)
		return fail("__libc_malloc's block: usable size too small");
	free(g);
	free(a);
	__libc_free(malloc(100));
#endif
	free(s);
	free(p);
	puts("malloc replaced");
	return 0;
}

/*
 * example.c - using tlmalloc from C: the tl_ API, and plain malloc/free
 * from several threads, which are tlmalloc's once the program is linked
 * with it (find_package: CMakeLists.txt; pkg-config: Makefile).
 *
 * Prints the library's version, what it did, and "ok" at the end; exits
 * 1 if a block lost its contents.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlmalloc.h>

#define THREADS 4
#define ROUNDS 20000
#define LIVE 64

/* A thread keeps LIVE blocks of varied sizes, each filled with its own
 * byte, and replaces them one by one, checking the contents first. */
static void *worker(void *arg)
{
	unsigned char *live[LIVE] = { 0 };
	size_t size[LIVE] = { 0 };
	unsigned seed = (unsigned)(size_t)arg;
	int bad = 0;

	for (int i = 0; i < ROUNDS && !bad; i++) {
		int k = i % LIVE;
		if (live[k] && (live[k][0] != (unsigned char)k ||
				live[k][size[k] - 1] != (unsigned char)k))
			bad = 1;
		free(live[k]);
		seed = seed * 1103515245u + 12345u;
		size[k] = 1 + (seed >> 16) % 3000;
		live[k] = malloc(size[k]);
		if (!live[k])
			return "malloc failed";
		memset(live[k], k, size[k]);
	}
	for (int k = 0; k < LIVE; k++)
		free(live[k]);
	return bad ? "a block lost its contents" : NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	int failed = 0;

	printf("tlmalloc %s (header %d.%d.%d)\n", tl_version(),
	       TLMALLOC_VERSION_MAJOR, TLMALLOC_VERSION_MINOR,
	       TLMALLOC_VERSION_PATCH);

	/* The tl_ names: the allocator under names of its own. */
	char *s = tl_malloc(100);
	if (!s)
		return 1;
	strcpy(s, "hello from tl_malloc");
	printf("%s: %zu usable bytes\n", s, tl_usable_size(s));
	tl_free(s);

	/* malloc is tlmalloc's: tl_usable_size accepts only tlmalloc's
	 * blocks (given another allocator's, it ends the program). */
	void *p = malloc(1000);
	if (!p)
		return 1;
	printf("malloc(1000) from tlmalloc: %zu usable bytes\n",
	       tl_usable_size(p));
	free(p);

	for (int t = 0; t < THREADS; t++) {
		if (pthread_create(&threads[t], NULL, worker,
				   (void *)(size_t)(t + 1)) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (int t = 0; t < THREADS; t++) {
		void *err;
		pthread_join(threads[t], &err);
		if (err) {
			fprintf(stderr, "thread %d: %s\n", t, (char *)err);
			failed = 1;
		}
	}
	if (failed)
		return 1;
	printf("%d threads x %d malloc/free: contents kept\n", THREADS, ROUNDS);
	printf("ok\n");
	return 0;
}

/*
 * misuse.c - small programs that each commit one misuse of the heap, at a
 * small, medium or large size, as a user's bug would: `misuse KIND SIZE`,
 * SIZE one of small (8 bytes), medium (4 KiB) or large (256 KiB).
 *
 * The program prints "survived" and exits 0 if nothing stopped it: the
 * misuse went unnoticed (or did no harm, as a 1-byte overrun inside a
 * block's rounding).  run.sh runs it with each variant of the library
 * preloaded and checks the outcome the variant promises (CMakeLists.txt
 * has the table).  It calls the allocator through the standard names
 * only, and is built with -fno-builtin so that no call is folded away.
 *
 *   double_free      free(p); free(p)
 *   free_interior    free(p + SIZE / 2), or p + 8 at 8 bytes
 *   free_past        free(p + 16384): a block start malloc never returned
 *                    (small, medium), inside the block (large)
 *   free_stack       free of a local array
 *   free_static      free of a static array
 *   realloc_freed    realloc of a freed block
 *   overflow_1       one byte written past the size asked for, then the
 *                    block freed and its class allocated again
 *   overflow_32      32 bytes past it
 *   underflow_1      one byte before the block
 *   underflow_32     32 bytes before it
 *   overflow_1mib    1 MiB written past the size asked for
 *   write_after_free  the freed block written, then its class allocated
 *   read_after_free  the freed block read
 *   read_fresh       a fresh block read before it is written
 *   zero_size        malloc(0), then 8 bytes written into it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t size_of(const char *name)
{
	if (strcmp(name, "small") == 0)
		return 8;
	if (strcmp(name, "medium") == 0)
		return 4096;
	if (strcmp(name, "large") == 0)
		return 256 << 10;
	fprintf(stderr, "misuse: size %s: small, medium or large\n", name);
	exit(2);
}

/* A block of n bytes with a neighbour on each side (same class), all
 * written: a misuse lands among blocks in use, as in a real program. */
static char *block(size_t n)
{
	static char *neighbours[2];
	neighbours[0] = malloc(n);
	char *p = malloc(n);
	neighbours[1] = malloc(n);
	if (p == NULL || neighbours[0] == NULL || neighbours[1] == NULL) {
		fprintf(stderr, "misuse: malloc(%zu) failed\n", n);
		exit(2);
	}
	memset(neighbours[0], 'a', n);
	memset(p, 'b', n);
	memset(neighbours[1], 'c', n);
	return p;
}

/* Keep the compiler from dropping a read. */
static volatile unsigned sink;

/* After a corruption: the class is freed into and allocated again, as the
 * program would go on. */
static void churn(char *p, size_t n)
{
	free(p);
	for (int i = 0; i < 4; i++) {
		char *q = malloc(n);
		if (q != NULL)
			memset(q, 'd', n);
	}
}

static void run(const char *kind, size_t n)
{
	char *p = block(n);
	if (strcmp(kind, "double_free") == 0) {
		free(p);
		free(p);
	} else if (strcmp(kind, "free_interior") == 0) {
		free(p + (n >= 16 ? n / 2 : 8));
	} else if (strcmp(kind, "free_past") == 0) {
		free(p + 16384);
	} else if (strcmp(kind, "free_stack") == 0) {
		char local[64];
		memset(local, 0, sizeof(local));
		free(local);
	} else if (strcmp(kind, "free_static") == 0) {
		static char global[64];
		free(global);
	} else if (strcmp(kind, "realloc_freed") == 0) {
		free(p);
		p = realloc(p, 2 * n);
		sink = p != NULL;
	} else if (strcmp(kind, "overflow_1") == 0) {
		p[n] = 'x';
		churn(p, n);
	} else if (strcmp(kind, "overflow_32") == 0) {
		memset(p + n, 'x', 32);
		churn(p, n);
	} else if (strcmp(kind, "underflow_1") == 0) {
		p[-1] = 'x';
		churn(p, n);
	} else if (strcmp(kind, "underflow_32") == 0) {
		memset(p - 32, 'x', 32);
		churn(p, n);
	} else if (strcmp(kind, "overflow_1mib") == 0) {
		memset(p + n, 'x', 1 << 20);
		churn(p, n);
	} else if (strcmp(kind, "write_after_free") == 0) {
		free(p);
		memset(p, 'x', n < 64 ? n : 64);
		for (int i = 0; i < 4; i++)
			sink += malloc(n) != NULL;
	} else if (strcmp(kind, "read_after_free") == 0) {
		free(p);
		for (size_t i = 0; i < n; i++)
			sink += (unsigned char)p[i];
	} else if (strcmp(kind, "read_fresh") == 0) {
		char *q = malloc(n);
		for (size_t i = 0; q != NULL && i < n; i++)
			sink += (unsigned char)q[i];
	} else if (strcmp(kind, "zero_size") == 0) {
		char *q = malloc(0);
		memset(q, 'x', 8);
		free(q);
	} else {
		fprintf(stderr, "misuse: no kind %s\n", kind);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: misuse KIND SIZE\n");
		return 2;
	}
	run(argv[1], size_of(argv[2]));
	printf("survived\n");
	return 0;
}

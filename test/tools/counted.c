/*
 * counted.c - a program whose allocations are known: test/tools/memcheck.sh
 * runs it under valgrind's memcheck, which must count every one and find
 * the block plant_leak() loses, at plant_leak's line.
 *
 * It prints how many blocks it allocated and freed (with write: stdio's
 * buffer would be one allocation more).  Built with -fno-builtin, so no
 * malloc/free pair is folded away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 200

static unsigned long allocs, frees;

static void *counted(void *p)
{
	if (p == NULL)
		abort();
	allocs++;
	return p;
}

static void release(void *p)
{
	free(p);
	frees++;
}

/* The planted leak: its only pointer is dropped on return. */
__attribute__((noinline)) static void plant_leak(void)
{
	char *p = counted(malloc(777));
	memset(p, 1, 777);
	__asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		void *a = counted(malloc((size_t)(16 + i * 13)));
		void *b = counted(calloc(3, 40));
		void *c = counted(realloc(NULL, 100));
		void *d = counted(realloc(c, 5000));	/* a copy: +1 alloc, +1 free */
		frees++;
		void *e = counted(aligned_alloc(64, 256));
		void *f = counted(malloc((size_t)200000));	/* a huge block */
		release(a);
		release(b);
		release(d);
		release(e);
		release(f);
	}
	plant_leak();
	char line[64];
	int n = snprintf(line, sizeof(line), "allocs %lu frees %lu\n", allocs,
			 frees);
	if (write(1, line, (size_t)n) != n)
		return 1;
	return 0;
}

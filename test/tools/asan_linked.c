/*
 * asan_linked.c - built with -fsanitize=address and linked with tlmalloc
 * (test/tools/CMakeLists.txt): the program runs, and AddressSanitizer
 * still catches an overflow of a heap block (argument "overflow"), because
 * its allocator serves malloc in such a process (README.md, "valgrind and
 * sanitizers").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char *s = strdup("tlmalloc");
	char *p = malloc(10);
	if (s == NULL || p == NULL)
		return 1;
	memcpy(p, s, 9);
	if (argc > 1 && strcmp(argv[1], "overflow") == 0)
		((volatile char *)p)[10] = 1;
	free(s);
	free(p);
	puts("ok");
	return 0;
}

/*
 * stderr_closed.c - a program that closes its stderr in an atexit handler,
 * as coreutils do (gnulib's close_stdout): run with TLMALLOC_SHOW_STATS=1,
 * tlmalloc's statistics, printed after that handler, must still reach the
 * stderr the program started with (the test's expression looks for them
 * there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void close_stderr(void)
{
	close(2);
}

int main(void)
{
	char *p = malloc(100);

	if (p == NULL)
		return 1;
	free(p);
	if (atexit(close_stderr) != 0)
		return 1;
	printf("stderr closed at exit\n");
	return 0;
}

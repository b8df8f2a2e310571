/*
 * diag.c - diagnostics, the bottom layer (include/tlmalloc/diag.h): the
 * one-line fatal report and the debug build's failed assertion, written
 * to stderr without allocating or stdio.  It calls nothing of tlmalloc's.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "tlmalloc/diag.h"

void tl_write_stderr(const char *msg, size_t len)
{
	int saved = errno;
	while (len > 0) {
		ssize_t n = write(2, msg, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		msg += n;
		len -= (size_t)n;
	}
	errno = saved;
}

#if TL_DEBUG > 0
void tl_assert_fail(const char *func, const char *what)
{
	tl_fatal(func, NULL, what);
}
#endif

void tl_fatal(const char *call, const void *p, const char *what)
{
	char buf[256];
	size_t cap = sizeof(buf) - 1;	/* room for the newline */
	size_t n = tl_append(buf, 0, cap, "tlmalloc: ");
	n = tl_append(buf, n, cap, call);
	n = tl_append(buf, n, cap, "(");
	n = tl_append_u64(buf, n, cap, (uintptr_t)p, 16);
	n = tl_append(buf, n, cap, "): ");
	n = tl_append(buf, n, cap, what);
	buf[n++] = '\n';
	tl_write_stderr(buf, n);
	abort();
}

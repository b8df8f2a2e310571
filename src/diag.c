/*
 * diag.c - diagnostics, the bottom layer (include/tlmalloc/diag.h): the
 * one-line fatal report and the debug build's failed assertion, written
 * to stderr without allocating or stdio.  It calls nothing of tlmalloc's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

static size_t format_hex(char *out, uintptr_t v)
{
	out[0] = '0';
	out[1] = 'x';
	return 2 + tl_format_u64(out + 2, v, 16);
}

void tl_fatal(const char *call, const void *p, const char *what)
{
	char buf[256];
	size_t n = 0;
	const char *parts[] = { "tlmalloc: ", call, "(" };
	for (size_t i = 0; i < 3; i++) {
		size_t len = strlen(parts[i]);
		memcpy(buf + n, parts[i], len);
		n += len;
	}
	n += format_hex(buf + n, (uintptr_t)p);
	size_t len = strlen(what);
	if (len > sizeof(buf) - n - 5)
		len = sizeof(buf) - n - 5;
	memcpy(buf + n, "): ", 3);
	n += 3;
	memcpy(buf + n, what, len);
	n += len;
	buf[n++] = '\n';
	tl_write_stderr(buf, n);
	abort();
}

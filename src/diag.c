/*
 * diag.c - diagnostics, the bottom layer (include/tlmalloc/diag.h): the
 * one-line fatal report and the debug build's failed assertion, written
 * to stderr without allocating or stdio.  It calls nothing of tlmalloc's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "tlmalloc/diag.h"

/* The copy of stderr for the reports at exit, or -1 (written once, at
 * start-up, before any report that needs it). */
static int kept_stderr = -1;

/* The lowest descriptor the copy may take: above those a program picks
 * by number (dup2 to 3, 4, ...), below the usual limit of 1024. */
#define TL_KEPT_STDERR_MIN 200

void tl_stderr_keep(void)
{
	int saved = errno;
	int fd = fcntl(2, F_DUPFD_CLOEXEC, TL_KEPT_STDERR_MIN);
	if (fd >= 0)
		__atomic_store_n(&kept_stderr, fd, __ATOMIC_RELAXED);
	errno = saved;
}

void tl_write_stderr(const char *msg, size_t len)
{
	int saved = errno;
	int fd = 2;
	while (len > 0) {
		ssize_t n = write(fd, msg, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			/* stderr closed: the copy kept at start-up */
			if (n < 0 && errno == EBADF && fd == 2 &&
			    (fd = __atomic_load_n(&kept_stderr,
						  __ATOMIC_RELAXED)) >= 0)
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

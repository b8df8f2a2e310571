/*
 * os.c - the OS layer: the only file that makes system calls (but diag.c's
 * write of a report to stderr).
 *
 * Every function saves and restores errno, so an allocator call that
 * succeeds never changes errno, and free() never does.  Nothing here
 * allocates or uses stdio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"

/*
 * The futex operations, as the kernel's ABI numbers them: <linux/futex.h>
 * comes with the kernel's headers, which a C library other than glibc
 * (musl-gcc) does not put on its include path.
 */
#ifndef FUTEX_WAIT_PRIVATE
#define FUTEX_WAIT_PRIVATE 128	/* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define FUTEX_WAKE_PRIVATE 129	/* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */
#endif

size_t tl_os_page_size(void)
{
	static size_t page_size;
	if (tl_unlikely(page_size == 0)) {
		long v = sysconf(_SC_PAGESIZE);
		page_size = v > 0 ? (size_t)v : 4096;
	}
	return page_size;
}

/* Fatal unless [addr, addr + size) is whole OS pages (os.h). */
static void check_pages(const char *call, const void *addr, size_t size)
{
	size_t mask = tl_os_page_size() - 1;
	if (tl_unlikely((((uintptr_t)addr | size) & mask) != 0))
		tl_fatal(call, addr, "not whole OS pages");
}

static void *map_raw(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Set from above (tl_os_set_reporting): this layer reads no option. */
static tl_atomic_u32 report_refused;
static bool (*map_fault)(void);

void tl_os_set_reporting(bool verbose, bool (*fault)(void))
{
	tl_u32_store_relaxed(&report_refused, verbose);
	__atomic_store_n(&map_fault, fault, __ATOMIC_RELAXED);
}

/* Fault injection: whether this mapping must fail as if refused. */
static bool map_fails_now(void)
{
	bool (*fault)(void) = __atomic_load_n(&map_fault, __ATOMIC_RELAXED);
	return fault != NULL && fault();
}

static void report_map_failure(size_t size)
{
	if (!tl_u32_load_relaxed(&report_refused))
		return;
	char buf[80] = "tlmalloc: the OS refused a mapping of ";
	size_t n = strlen(buf);
	n += tl_format_u64(buf + n, size, 10);
	memcpy(buf + n, " bytes\n", 7);
	tl_write_stderr(buf, n + 7);
}

void *tl_os_map_aligned(size_t size, size_t alignment, size_t offset)
{
	int saved = errno;
	if (tl_unlikely(map_fails_now())) {
		report_map_failure(size);
		return NULL;
	}
	if (alignment < TL_SEGMENT_SIZE)
		alignment = TL_SEGMENT_SIZE;
	tl_assert(offset % TL_SEGMENT_SIZE == 0);
	/* Try the exact size first: often the kernel hands out aligned space. */
	uint8_t *p = map_raw(size);
	if (p != NULL && ((uintptr_t)p + offset) % alignment == 0)
		goto out;
	if (p != NULL)
		munmap(p, size);
	/* Over-map, then trim the head and the tail. */
	size_t total = size + alignment;
	if (total < size) {
		p = NULL;
		goto out;
	}
	uint8_t *raw = map_raw(total);
	if (raw == NULL) {
		report_map_failure(total);
		p = NULL;
		goto out;
	}
	uintptr_t want = ((uintptr_t)raw + offset + alignment - 1) &
			 ~(uintptr_t)(alignment - 1);
	p = (uint8_t *)(want - offset);
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	size_t tail = (size_t)(raw + total - (p + size));
	if (tail > 0)
		munmap(p + size, tail);
out:
	errno = saved;
	return p;
}

void tl_os_advise_huge(void *addr, size_t size)
{
#ifdef MADV_HUGEPAGE
	int saved = errno;
	check_pages("madvise", addr, size);
	madvise(addr, size, MADV_HUGEPAGE);
	errno = saved;
#else
	(void)addr;
	(void)size;
#endif
}

void tl_os_unmap(void *addr, size_t size)
{
	int saved = errno;
	check_pages("munmap", addr, size);
	munmap(addr, size);
	errno = saved;
}

bool tl_os_reserve(void *addr, size_t size)
{
	int saved = errno;
	check_pages("mmap", addr, size);
	void *p = mmap(addr, size, PROT_NONE,
		       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	errno = saved;
	return p == addr;
}

void tl_os_purge(void *addr, size_t size)
{
	int saved = errno;
	check_pages("madvise", addr, size);
	madvise(addr, size, MADV_DONTNEED);
	errno = saved;
}

bool tl_os_remap_in_place(void *addr, size_t old_size, size_t new_size)
{
	int saved = errno;
	check_pages("mremap", addr, old_size);
	check_pages("mremap", addr, new_size);
	void *p = mremap(addr, old_size, new_size, 0);
	errno = saved;
	return p == addr;
}

bool tl_os_map_at(void *addr, size_t size)
{
	int saved = errno;
	bool done = false;
	check_pages("mmap", addr, size);
	if (tl_unlikely(map_fails_now())) {
		report_map_failure(size);
		goto out;
	}
	void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);
	done = p == addr;
	/* A kernel older than 4.17 takes the address as a hint. */
	if (p != MAP_FAILED && !done)
		munmap(p, size);
out:
	errno = saved;
	return done;
}

void *tl_os_remap_moved(void *addr, size_t old_size, size_t new_size)
{
	int saved = errno;
	void *result = NULL;
	check_pages("mremap", addr, old_size);
	check_pages("mremap", addr, new_size);
	if (tl_unlikely(map_fails_now())) {
		report_map_failure(new_size);
		goto out;
	}
	/* Reserve aligned address space, then move the pages over it. */
	size_t total = new_size + TL_SEGMENT_SIZE;
	if (total < new_size)
		goto out;
	uint8_t *raw = mmap(NULL, total, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		report_map_failure(total);
		goto out;
	}
	uint8_t *to = (uint8_t *)(((uintptr_t)raw + TL_SEGMENT_SIZE - 1) &
				  ~(uintptr_t)TL_SEGMENT_MASK);
	void *moved = mremap(addr, old_size, new_size,
			     MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (moved != to) {
		munmap(raw, total);
		goto out;
	}
	if (to > raw)
		munmap(raw, (size_t)(to - raw));
	size_t tail = (size_t)(raw + total - (to + new_size));
	if (tail > 0)
		munmap(to + new_size, tail);
	result = to;
out:
	errno = saved;
	return result;
}

/*
 * One mremap moves the pages of one mapping (kernels before 6.17; later
 * ones move several at once).  A range over several mappings, as a huge
 * segment gathered from pieces is, fails with EFAULT there: it moves in
 * halves, down to single mappings, and a half that moved goes back if the
 * other half cannot, so a refusal leaves the source where it was.
 */
static bool move_range(uint8_t *from, size_t size, uint8_t *to, size_t page)
{
	if (mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to) ==
	    (void *)to)
		return true;
	if (errno != EFAULT || size <= page)
		return false;
	size_t half = (size / 2) & ~(page - 1);
	if (!move_range(from, half, to, page))
		return false;
	if (move_range(from + half, size - half, to + half, page))
		return true;
	if (!move_range(to, half, from, page))	/* the block would be lost */
		tl_fatal("mremap", from, "could not move pages back");
	return false;
}

bool tl_os_move_pages(void *from, size_t size, void *to)
{
	int saved = errno;
	check_pages("mremap", from, size);
	check_pages("mremap", to, size);
	bool moved = move_range(from, size, to, tl_os_page_size());
	/* A refused mremap may have unmapped some of the pages it was to
	 * replace: fresh ones take their place. */
	if (!moved && mmap(to, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != to)
		tl_fatal("mremap", to, "could not map fresh pages after a "
				       "refused move");
	errno = saved;
	return moved;
}

uint64_t tl_os_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint32_t tl_os_coarse_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000u +
			  (uint64_t)ts.tv_nsec / 1000000u);
}

void tl_os_futex_wait(const uint32_t *word, uint32_t expected)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
	errno = saved;
}

void tl_os_futex_wait_ms(const uint32_t *word, uint32_t expected,
			 uint64_t timeout_ms)
{
	int saved = errno;
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ms / 1000),
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000L,
	};
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
	errno = saved;
}

void tl_os_futex_wake_one(const uint32_t *word)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

#if TL_SECURE
void tl_os_random(void *buf, size_t len)
{
	int saved = errno;
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (len > 0) {
		/* No getrandom (old kernel, seccomp): time and an address. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
			     (uint64_t)(uintptr_t)&ts ^ (uint64_t)getpid() << 48;
		while (len-- > 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			*p++ = (uint8_t)(x >> 24);
		}
	}
	errno = saved;
}
#endif

/* mprotect of whole OS pages, errno kept. */
static bool protect(void *addr, size_t size, int prot)
{
	int saved = errno;
	check_pages("mprotect", addr, size);
	int r = mprotect(addr, size, prot);
	errno = saved;
	return r == 0;
}

bool tl_os_guard(void *addr, size_t size)
{
	return protect(addr, size, PROT_NONE);
}

bool tl_os_read_only(void *addr, size_t size)
{
	return protect(addr, size, PROT_READ);
}

bool tl_os_unguard(void *addr, size_t size)
{
	return protect(addr, size, PROT_READ | PROT_WRITE);
}

void tl_os_map_shadow(uintptr_t addr, size_t size)
{
	/* Most of these fail (EEXIST: something is mapped there), at
	 * start-up: the program's main must still find errno 0. */
	int saved = errno;
	void *p = mmap((void *)addr, size, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);
	/* A kernel older than 4.17 takes the address as a hint. */
	if (p != MAP_FAILED && (uintptr_t)p != addr)
		munmap(p, size);
	errno = saved;
}

bool tl_os_catch_segv(void (*fn)(int, siginfo_t *, void *),
		      struct sigaction *prev)
{
	int saved = errno;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	int r = sigaction(SIGSEGV, &sa, prev);
	errno = saved;
	return r == 0;
}

void tl_os_restore_segv(const struct sigaction *prev, bool again)
{
	int saved = errno;
	sigaction(SIGSEGV, prev, NULL);
	if (again)
		raise(SIGSEGV);
	errno = saved;
}

/* ---- the heap profiler's (profile*.c) ---- */

void *tl_os_map(size_t size)
{
	int saved = errno;
	void *p = map_raw(size);
	errno = saved;
	return p;
}

int tl_os_open(const char *path, bool write_it)
{
	int saved = errno;
	int fd = write_it ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				 0644)
			  : open(path, O_RDONLY | O_CLOEXEC);
	int r = fd >= 0 ? fd : -errno;
	errno = saved;
	return r;
}

bool tl_os_write_all(int fd, const void *buf, size_t len)
{
	int saved = errno;
	const char *p = buf;
	bool ok = true;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			ok = false;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	errno = saved;
	return ok;
}

long tl_os_read(int fd, void *buf, size_t len)
{
	int saved = errno;
	ssize_t n;
	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	errno = saved;
	return (long)n;
}

bool tl_os_close(int fd)
{
	int saved = errno;
	bool ok = close(fd) == 0;
	errno = saved;
	return ok;
}

int tl_os_getpid(void)
{
	return (int)getpid();
}

bool tl_os_is_initial_thread(void)
{
	return syscall(SYS_gettid) == getpid();
}

bool tl_os_catch_signal(int sig, void (*fn)(int))
{
	int saved = errno;
	struct sigaction old, sa;
	bool ok = false;
	if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
	    (old.sa_flags & SA_SIGINFO) != 0)
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ok = sigaction(sig, &sa, NULL) == 0;
out:
	errno = saved;
	return ok;
}

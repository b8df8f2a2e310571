/*
 * os.h - the OS contract.  src/os.c is the only file that makes system
 * calls (mmap, munmap, madvise, mremap, mprotect, futex, clock, sigaction,
 * the profiler's files; getrandom in the secure build) but diag.c's write
 * of a report; everything above it goes through these functions.  None
 * of them allocates, and every one of them leaves errno as it found it.
 * This layer reads no option: the values it needs are pushed down
 * (tl_os_set_reporting).
 */
#ifndef TLMALLOC_OS_H
#define TLMALLOC_OS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The OS page size, read once: 4 KiB on x86-64; 4, 16 or 64 KiB on arm64.
 * Nothing above this layer assumes one: every range given to unmap, purge,
 * remap, move or guard is whole OS pages, which these functions check (a
 * range that is not is tlmalloc's bug, a tl_fatal: the kernel would round
 * a purge's length up, over the next page's live blocks).
 */
size_t tl_os_page_size(void);

/*
 * Map size bytes (a multiple of the page size), read-write, zero-filled, at
 * a multiple of TL_SEGMENT_SIZE such that (result + offset) is a multiple
 * of alignment.  offset must be a multiple of TL_SEGMENT_SIZE (0 will do
 * for any alignment up to TL_SEGMENT_SIZE).  NULL when the OS refuses.
 */
void *tl_os_map_aligned(size_t size, size_t alignment, size_t offset);
void tl_os_unmap(void *addr, size_t size);
/* Advise the kernel to back a mapping with transparent huge pages
 * (MADV_HUGEPAGE, the option huge_pages: segment.c).  A hint: it changes
 * nothing where the kernel has none, and a range that holds no whole
 * aligned huge page gets none. */
void tl_os_advise_huge(void *addr, size_t size);
/* Replace the pages at addr with a mapping that cannot be accessed and
 * holds no memory (the addresses stay reserved); false when the OS
 * refuses. */
bool tl_os_reserve(void *addr, size_t size);

/* Give the pages back; they read as zero afterwards. */
void tl_os_purge(void *addr, size_t size);

/* Grow or shrink a mapping where it stands; false if it cannot. */
bool tl_os_remap_in_place(void *addr, size_t old_size, size_t new_size);
/* Map fresh pages at addr, where nothing is mapped; false if something is
 * or the OS refuses. */
bool tl_os_map_at(void *addr, size_t size);

/*
 * Move a mapping, growing it, to a new place that is a multiple of
 * TL_SEGMENT_SIZE: the pages move, their contents are not copied.  The new
 * address, or NULL (the old mapping is then untouched).
 */
void *tl_os_remap_moved(void *addr, size_t old_size, size_t new_size);

/*
 * Move size bytes of pages (one mapping or several) over the pages at to,
 * which they replace: no copy, no fault.  false if the OS refuses: then
 * nothing moved, and the pages at to are fresh (zero).
 */
bool tl_os_move_pages(void *from, size_t size, void *to);

/*
 * Set from above (options.c, whenever an option changes), so that this
 * layer reads no option: verbose, whether a refused mapping is reported on
 * stderr; fault, asked before each mapping, true to make it fail as if the
 * OS refused it (fault injection for tests; NULL: never).
 */
void tl_os_set_reporting(bool verbose, bool (*fault)(void));

/* Monotonic clock in milliseconds. */
uint64_t tl_os_now_ms(void);
/* The same from the coarse clock (a tick, a few ms, behind): cheaper, for
 * stamps compared in tens of ms. */
uint32_t tl_os_coarse_ms(void);

/* Futex wait while *word == expected (spurious wake-ups allowed). */
void tl_os_futex_wait(const uint32_t *word, uint32_t expected);
/* Same, giving up after timeout_ms. */
void tl_os_futex_wait_ms(const uint32_t *word, uint32_t expected,
			 uint64_t timeout_ms);
void tl_os_futex_wake_one(const uint32_t *word);

/* The secure build only (TL_SECURE): fill buf with random bytes
 * (getrandom; a weaker fallback if refused). */
void tl_os_random(void *buf, size_t len);
/* Guard pages (the secure build's, guarded sampling's): make whole pages
 * inaccessible, or read-write again; false when the OS refuses. */
bool tl_os_guard(void *addr, size_t size);
bool tl_os_unguard(void *addr, size_t size);
/* Pages that can be read, not written; false when the OS refuses. */
bool tl_os_read_only(void *addr, size_t size);
/* Every build, at start-up (segment.c, tl_segment_shadow_objects): map
 * size bytes of zeros, read-only, at addr if nothing is mapped there (not
 * counted by the fault_map option); nothing otherwise. */
void tl_os_map_shadow(uintptr_t addr, size_t size);

/*
 * Install fn as the SIGSEGV handler (SA_SIGINFO, SA_ONSTACK, SA_RESTART),
 * saving the action it replaces in *prev; false if the OS refuses.
 */
bool tl_os_catch_segv(void (*fn)(int, siginfo_t *, void *),
		      struct sigaction *prev);
/* Put a saved SIGSEGV action back; with again, send SIGSEGV to the calling
 * thread (delivered once the handler that calls this returns). */
void tl_os_restore_segv(const struct sigaction *prev, bool again);

/* The heap profiler's (profile*.c): */
/* size bytes of fresh zeros (whole OS pages), or NULL. */
void *tl_os_map(size_t size);
/* Open path to write it anew (created 0644, truncated) or to read it: a
 * descriptor, or -errno. */
int tl_os_open(const char *path, bool write_it);
/* Write all of buf; false on an error (a full disk, a closed pipe). */
bool tl_os_write_all(int fd, const void *buf, size_t len);
/* read(2): bytes read, 0 at the end, negative on an error. */
long tl_os_read(int fd, void *buf, size_t len);
bool tl_os_close(int fd);
int tl_os_getpid(void);
/* Whether the caller is the process's initial thread (its id is the
 * process's). */
bool tl_os_is_initial_thread(void);
/* Install fn as the handler of sig (SA_RESTART) if sig has none yet (its
 * action is the default one); false if it has one, or the OS refuses. */
bool tl_os_catch_signal(int sig, void (*fn)(int));

#endif /* TLMALLOC_OS_H */

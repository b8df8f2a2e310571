/*
 * lock.c - the contended half of the futex lock (see lock.h).
 *
 * A waiter marks the lock 2 ("locked, somebody waits") and sleeps on the
 * futex; the releaser that sees 2 wakes one sleeper, which takes the lock
 * as 2 again since others may still sleep.  A short spin first, because
 * the pool's critical sections are a few dozen instructions long.
 */
#include "tlmalloc/lock.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"

#define TL_LOCK_SPINS 64

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void tl_lock_acquire_contended(tl_lock *lock)
{
	tl_u64_add_relaxed(&lock->waited, 1);
	for (int i = 0; i < TL_LOCK_SPINS; i++) {
		uint32_t expected = 0;
		if (tl_u32_load_relaxed(&lock->state) == 0 &&
		    tl_u32_cas_strong_acquire(&lock->state, &expected, 1))
			return;
		cpu_relax();
	}
	while (tl_u32_exchange_acquire(&lock->state, 2) != 0)
		tl_os_futex_wait((const uint32_t *)&lock->state.v, 2);
}

void tl_lock_wake(tl_lock *lock)
{
	tl_os_futex_wake_one((const uint32_t *)&lock->state.v);
}

/*
 * lock.h - the project's own futex lock: a compare-and-swap fast path and a
 * futex wait only on contention.  Three states (0 unlocked, 1 locked,
 * 2 locked with waiters), so an uncontended unlock makes no system call.
 * Used for the global pool, the lock baseline and each heap's full list
 * (heap.c, "Full pages given away"), nowhere else.
 */
#ifndef TLMALLOC_LOCK_H
#define TLMALLOC_LOCK_H

#include "tlmalloc/atomic.h"

typedef struct tl_lock {
	tl_atomic_u32 state;
	uint64_t acquired;	/* under the lock: times taken */
	tl_atomic_u64 waited;	/* times a taker had to spin or sleep */
} tl_lock;

#define TL_LOCK_INIT { TL_ATOMIC_INIT(0), 0, TL_ATOMIC_INIT(0) }

void tl_lock_acquire_contended(tl_lock *lock);
void tl_lock_wake(tl_lock *lock);

static inline void tl_lock_acquire(tl_lock *lock)
{
	uint32_t expected = 0;
	if (__builtin_expect(!tl_u32_cas_strong_acquire(&lock->state,
							&expected, 1), 0))
		tl_lock_acquire_contended(lock);
	lock->acquired++;
}

/* Take the lock if it is free, without waiting: whether it was taken. */
static inline bool tl_lock_try(tl_lock *lock)
{
	uint32_t expected = 0;
	if (!tl_u32_cas_strong_acquire(&lock->state, &expected, 1))
		return false;
	lock->acquired++;
	return true;
}

static inline void tl_lock_release(tl_lock *lock)
{
	/* 2 means somebody sleeps on the futex: wake one. */
	if (__builtin_expect(atomic_exchange_explicit(&lock->state.v, 0,
						      memory_order_release) == 2, 0))
		tl_lock_wake(lock);
}

/* After fork, in the child: the holder may have been another thread. */
static inline void tl_lock_reset(tl_lock *lock)
{
	tl_u32_store_relaxed(&lock->state, 0);
}

#endif /* TLMALLOC_LOCK_H */

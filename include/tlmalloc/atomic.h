/*
 * atomic.h - atomics with the memory order in the name.
 *
 * The fields whose every access is shared (owner, thread_free, the segment
 * map, the lock and purger words, the counters) are tl_atomic_* types, so
 * a plain read or write of them does not compile: each access says its
 * order.  Thin wrappers over C11 <stdatomic.h>.  A few owner-written page
 * fields that other threads only read (avail, capacity, block_size,
 * allocs, slice_limit, sized_min, purged) stay plain for the owner's fast
 * path and are read elsewhere with relaxed __atomic builtins; docs/design.md,
 * "Memory order, field by field", lists who writes and reads each, and how.
 */
#ifndef TLMALLOC_ATOMIC_H
#define TLMALLOC_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct { _Atomic(uintptr_t) v; } tl_atomic_uptr;
typedef struct { _Atomic(uint32_t) v; } tl_atomic_u32;
typedef struct { _Atomic(uint64_t) v; } tl_atomic_u64;

#define TL_ATOMIC_INIT(x) { (x) }

static inline uintptr_t tl_uptr_load_relaxed(const tl_atomic_uptr *a)
{
	return atomic_load_explicit((_Atomic(uintptr_t) *)&a->v,
				    memory_order_relaxed);
}

static inline uintptr_t tl_uptr_load_acquire(const tl_atomic_uptr *a)
{
	return atomic_load_explicit((_Atomic(uintptr_t) *)&a->v,
				    memory_order_acquire);
}

static inline void tl_uptr_store_relaxed(tl_atomic_uptr *a, uintptr_t x)
{
	atomic_store_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_uptr_store_release(tl_atomic_uptr *a, uintptr_t x)
{
	atomic_store_explicit(&a->v, x, memory_order_release);
}

static inline uintptr_t tl_uptr_exchange_acquire(tl_atomic_uptr *a, uintptr_t x)
{
	return atomic_exchange_explicit(&a->v, x, memory_order_acquire);
}

/* On failure *expected is updated with the value seen. */
static inline bool tl_uptr_cas_weak_release(tl_atomic_uptr *a,
					    uintptr_t *expected, uintptr_t x)
{
	return atomic_compare_exchange_weak_explicit(&a->v, expected, x,
						     memory_order_release,
						     memory_order_relaxed);
}

static inline uint32_t tl_u32_load_relaxed(const tl_atomic_u32 *a)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)&a->v,
				    memory_order_relaxed);
}

static inline uint32_t tl_u32_load_acquire(const tl_atomic_u32 *a)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)&a->v,
				    memory_order_acquire);
}

static inline void tl_u32_store_relaxed(tl_atomic_u32 *a, uint32_t x)
{
	atomic_store_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_u32_store_release(tl_atomic_u32 *a, uint32_t x)
{
	atomic_store_explicit(&a->v, x, memory_order_release);
}

static inline void tl_u32_add_relaxed(tl_atomic_u32 *a, uint32_t x)
{
	atomic_fetch_add_explicit(&a->v, x, memory_order_relaxed);
}

/* The value before the add. */
static inline uint32_t tl_u32_fetch_add_relaxed(tl_atomic_u32 *a, uint32_t x)
{
	return atomic_fetch_add_explicit(&a->v, x, memory_order_relaxed);
}

static inline uint32_t tl_u32_exchange_acquire(tl_atomic_u32 *a, uint32_t x)
{
	return atomic_exchange_explicit(&a->v, x, memory_order_acquire);
}

static inline bool tl_u32_cas_strong_acquire(tl_atomic_u32 *a,
					     uint32_t *expected, uint32_t x)
{
	return atomic_compare_exchange_strong_explicit(&a->v, expected, x,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static inline uint64_t tl_u64_load_relaxed(const tl_atomic_u64 *a)
{
	return atomic_load_explicit((_Atomic(uint64_t) *)&a->v,
				    memory_order_relaxed);
}

static inline void tl_u64_add_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	atomic_fetch_add_explicit(&a->v, x, memory_order_relaxed);
}

/* The value before the add. */
static inline uint64_t tl_u64_fetch_add_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	return atomic_fetch_add_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_u64_sub_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	atomic_fetch_sub_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_u64_or_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	atomic_fetch_or_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_u64_and_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	atomic_fetch_and_explicit(&a->v, x, memory_order_relaxed);
}

/* The value before the and. */
static inline uint64_t tl_u64_fetch_and_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	return atomic_fetch_and_explicit(&a->v, x, memory_order_relaxed);
}

static inline void tl_u64_store_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	atomic_store_explicit(&a->v, x, memory_order_relaxed);
}

static inline bool tl_u64_cas_weak_relaxed(tl_atomic_u64 *a,
					   uint64_t *expected, uint64_t x)
{
	return atomic_compare_exchange_weak_explicit(&a->v, expected, x,
						     memory_order_relaxed,
						     memory_order_relaxed);
}

/* Raise *a to x if it is below; the larger of the two, as it stands
 * after the call. */
static inline uint64_t tl_u64_max_relaxed(tl_atomic_u64 *a, uint64_t x)
{
	uint64_t v = tl_u64_load_relaxed(a);
	while (v < x && !tl_u64_cas_weak_relaxed(a, &v, x))
		;
	return v > x ? v : x;
}

#endif /* TLMALLOC_ATOMIC_H */

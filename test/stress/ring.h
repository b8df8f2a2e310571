/*
 * ring.h - a single-producer, single-consumer ring of RING pointers (the
 * including file defines RING): ring_push waits while it is full,
 * ring_pop while it is empty, each yielding the CPU.  Shared by the
 * producer/consumer and waiting-owner stress tests.
 */
#ifndef TL_TEST_RING_H
#define TL_TEST_RING_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

#ifndef RING
#error "define RING, the ring's slots, before including ring.h"
#endif

struct ring {
	_Atomic size_t head; /* written by the producer only */
	_Atomic size_t tail; /* written by the consumer only */
	void *slot[RING];
};

static inline void ring_push(struct ring *r, void *p)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	while (head - atomic_load_explicit(&r->tail, memory_order_acquire) ==
	       RING)
		sched_yield();
	r->slot[head % RING] = p;
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

static inline void *ring_pop(struct ring *r)
{
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	void *p;

	while (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
		sched_yield();
	p = r->slot[tail % RING];
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	return p;
}

#endif /* TL_TEST_RING_H */

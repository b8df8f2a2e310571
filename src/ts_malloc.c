/*
 * ts_malloc.c - the classic comparison API of include/ts_malloc.h: the
 * lock baseline (ts_malloc_lock/ts_free_lock) on the shared heap
 * (shared_heap.c), whose lock is the only difference from the thread-local
 * path (ts_malloc_nolock/ts_free_nolock), and the held-bytes figures.
 */
#include "ts_malloc.h"
#include "tlmalloc/fastpath.h"

void *ts_malloc_lock(size_t size)
{
#if TL_SECURE
	/* a user's size: the secure build's canary around it, as malloc */
	size_t tail = tl_canary_tail();
	void *p = tail == 0 ? tl_shared_malloc(size)
			    : tl_canary_set(tl_shared_malloc(
						    tl_canary_ask(size, tail)),
					    size, tail);
#else
	void *p = tl_shared_malloc(size);
#endif
	tl_purger_poll();
	return p;
}

void ts_free_lock(void *ptr)
{
	tl_shared_free(ptr);
	tl_purger_poll();
}

void *ts_malloc_nolock(size_t size)
{
	return tl_malloc_local(size);
}

void ts_free_nolock(void *ptr)
{
	tl_free_local(ptr);
}

unsigned long get_data_segment_size(void)
{
	struct tl_pool_stats st;
	tl_stats_counted(&st);
	return (unsigned long)st.held;
}

unsigned long get_data_segment_free_space_size(void)
{
	struct tl_pool_stats st;
	tl_stats_counted(&st);
	return (unsigned long)(st.held > st.live ? st.held - st.live : 0);
}

/*
 * held.h - memory held stays bounded while threads come and go: after the
 * first baseline_at threads, get_data_segment_size() may never exceed
 * twice what it was then plus slack.  Shared by the thread-churn and
 * teardown stress tests.
 */
#ifndef TL_TEST_HELD_H
#define TL_TEST_HELD_H

#include "alloc_api.h"
#include "check.h"

/* Call after thread k; *baseline is recorded at k == baseline_at. */
static inline void check_held(size_t k, size_t baseline_at,
			      unsigned long slack, unsigned long *baseline)
{
	unsigned long held = get_data_segment_size();

	if (k == baseline_at)
		*baseline = held;
	if (k < baseline_at)
		return;
	CHECKF(held <= 2 * *baseline + slack, "after %zu threads: %lu bytes "
	       "held, %lu after %zu", k, held, *baseline, baseline_at);
}

#endif /* TL_TEST_HELD_H */

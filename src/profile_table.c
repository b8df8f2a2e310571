/*
 * profile_table.c - the heap profiler's tables (docs/profiling.md): the
 * distinct stacks, each with its estimated live and allocated counts and
 * bytes, and the live samples by address, so a sampled block's free takes
 * what it stood for out of its stack's live figures.
 *
 * Both are open-addressing tables mapped once at set-up (fixed sizes,
 * profile_trigger.c), kept at most three quarters full: a sample that
 * does not fit is counted as dropped.  Everything here runs under
 * tl_prof.lock (profiler.h).
 */
#include <string.h>

#include "tlmalloc/profiler.h"

static uint64_t stack_hash(const uintptr_t *pc, unsigned depth)
{
	uint64_t h = depth;
	for (unsigned i = 0; i < depth; i++)
		h = tl_prof_mix64(h ^ pc[i]);
	return h | 1;
}

/* The stack's slot (tl_prof.lock), added if new; -1 if the table is full. */
static int stack_find(const uintptr_t *pc, unsigned depth)
{
	uint64_t h = stack_hash(pc, depth);
	for (uint32_t i = (uint32_t)h % PROF_STACKS;; i = (i + 1) % PROF_STACKS) {
		struct prof_stack *st = &tl_prof.stacks[i];
		if (st->hash == 0) {
			if (tl_prof.stack_count >= PROF_STACKS * 3 / 4)
				return -1;
			st->hash = h;
			st->depth = depth;
			memcpy(st->pc, pc, depth * sizeof(pc[0]));
			tl_prof.stack_count++;
			return (int)i;
		}
		if (st->hash == h && st->depth == depth &&
		    memcmp(st->pc, pc, depth * sizeof(pc[0])) == 0)
			return (int)i;
	}
}

/* ---- live samples: linear probing by address ---- */

static uint32_t sample_home(uintptr_t addr)
{
	return (uint32_t)(tl_prof_mix64(addr) % PROF_SAMPLES);
}

static struct prof_sample *sample_find(uintptr_t addr)
{
	for (uint32_t i = sample_home(addr);; i = (i + 1) % PROF_SAMPLES) {
		struct prof_sample *s = &tl_prof.samples[i];
		if (s->addr == addr)
			return s;
		if (s->addr == 0)
			return NULL;
	}
}

/* Take s out, shifting back the entries after it that it displaced. */
static void sample_remove(struct prof_sample *s)
{
	uint32_t hole = (uint32_t)(s - tl_prof.samples);
	for (uint32_t i = (hole + 1) % PROF_SAMPLES;; i = (i + 1) % PROF_SAMPLES) {
		struct prof_sample *e = &tl_prof.samples[i];
		if (e->addr == 0)
			break;
		uint32_t home = sample_home(e->addr);
		/* e may fill the hole unless its home lies in (hole, i] */
		bool stays = hole < i ? (home > hole && home <= i)
				      : (home > hole || home <= i);
		if (!stays) {
			tl_prof.samples[hole] = *e;
			hole = i;
		}
	}
	tl_prof.samples[hole].addr = 0;
	tl_prof.sample_count--;
}

void tl_prof_forget_locked(uintptr_t addr)
{
	struct prof_sample *s = sample_find(addr);
	if (s == NULL)
		return;
	struct prof_stack *st = &tl_prof.stacks[s->stack];
	st->live_count -= s->count;
	st->live_bytes -= s->bytes;
	tl_prof.live_bytes -= s->bytes;
	if (s->huge)
		atomic_fetch_sub_explicit(&tl_profile_huge_live.v, 1,
					  memory_order_relaxed);
	sample_remove(s);
}

void tl_prof_record_locked(void *p, double s, double count,
			   const uintptr_t *pc, unsigned depth)
{
	tl_prof.samples_total++;
	int si = stack_find(pc, depth);
	if (si < 0 || tl_prof.sample_count >= PROF_SAMPLES * 3 / 4) {
		tl_prof.dropped++;
		return;
	}
	tl_prof_forget_locked((uintptr_t)p);	/* a huge block unmapped unseen */
	uint32_t i = sample_home((uintptr_t)p);
	while (tl_prof.samples[i].addr != 0)
		i = (i + 1) % PROF_SAMPLES;
	bool huge = tl_page_of(tl_segment_of(p), p)->kind == TL_PAGE_HUGE;
	tl_prof.samples[i] = (struct prof_sample){
		.addr = (uintptr_t)p, .stack = (uint32_t)si, .huge = huge,
		.count = count, .bytes = s * count,
	};
	tl_prof.sample_count++;
	if (huge)
		atomic_fetch_add_explicit(&tl_profile_huge_live.v, 1,
					  memory_order_relaxed);
	struct prof_stack *st = &tl_prof.stacks[si];
	st->live_count += count;
	st->live_bytes += s * count;
	st->alloc_count += count;
	st->alloc_bytes += s * count;
	tl_prof.live_bytes += s * count;
	double growth = (double)tl_option(TL_OPT_profile_growth) * 1048576.0;
	if (growth > 0 && tl_prof.live_bytes >= tl_prof.growth_mark + growth) {
		tl_prof.growth_mark = tl_prof.live_bytes;
		tl_prof_dump_numbered_locked();
	}
}

void tl_prof_move_locked(uintptr_t from, uintptr_t to)
{
	struct prof_sample *s = tl_prof.samples != NULL ? sample_find(from)
							: NULL;
	if (s == NULL)
		return;
	struct prof_sample moved = *s;
	sample_remove(s);
	moved.addr = to;
	uint32_t i = sample_home(moved.addr);
	while (tl_prof.samples[i].addr != 0)
		i = (i + 1) % PROF_SAMPLES;
	tl_prof.samples[i] = moved;
	tl_prof.sample_count++;
}

void tl_profile_stats_get(struct tl_profile_stats *out)
{
	tl_lock_acquire(&tl_prof.lock);
	*out = (struct tl_profile_stats){
		.samples = tl_prof.sample_count,
		.samples_total = tl_prof.samples_total,
		.dropped = tl_prof.dropped,
		.held = tl_prof.held + tl_profile_stack_held(),
	};
	tl_lock_release(&tl_prof.lock);
}

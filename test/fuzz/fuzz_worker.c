/*
 * fuzz_worker.c - the second thread of the fuzz harness.  It frees blocks
 * the main thread hands it (cross-thread frees into the main thread's
 * pages) and allocates blocks for the main thread to use and free
 * (cross-thread frees the other way).  Restarting it ends its thread, so
 * its heap goes away and its pages with live blocks are abandoned.
 *
 * Jobs go through a ring under a mutex; the worker takes them in order, so
 * everything before the ring's head is done.  A handed block stays in the
 * model (as FZ_AWAY, its extent still reserved) until the main thread
 * collects its slot from freed_slots after the worker freed it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tlmalloc.h"

#define RING 64

static struct fz_job ring[RING];
static unsigned head;		/* jobs done (the worker moves it) */
static unsigned tail;		/* jobs queued (the main thread moves it) */
static int freed_slots[FZ_SLOTS];	/* freed, not yet collected */
static int freed_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static pthread_t thread;

static void worker_free(struct fz_job *job)
{
	struct fz_block *b = &job->block;
	fz_verify_block(b, b->usable, "worker, before free");
	errno = FZ_ERRNO_MARK;
	switch (job->mode & 3) {
	case 0:
		tl_free(b->p);
		break;
	case 1:	/* free_sized is for malloc's blocks (C23), which the
		 * sized free checks: an aligned block gives its alignment */
		if (b->align > FZ_MIN_ALIGN)
			tl_free_aligned_sized(b->p, b->align, b->req);
		else
			tl_free_sized(b->p, b->req);
		break;
	case 2:
		if (tl_realloc(b->p, 0) != NULL)
			fz_fail("worker: realloc(%p, 0) did not return NULL",
				(void *)b->p);
		break;
	default:
		if (b->align > FZ_MIN_ALIGN)
			tl_free_aligned_sized(b->p, b->align, b->req);
		else
			tl_free_sized(b->p, b->req);
		break;
	}
	if (errno != FZ_ERRNO_MARK)
		fz_fail("worker: freeing %p changed errno to %d", (void *)b->p,
			errno);
}

static void worker_alloc(struct fz_job *job)
{
	errno = FZ_ERRNO_MARK;
	switch (job->mode & 3) {
	case 0:
		job->out = tl_malloc(job->size);
		break;
	case 1:
		job->out = tl_calloc(1, job->size);
		break;
	case 2:
		job->out = tl_aligned_alloc(64, job->size);
		break;
	default:
		job->out = tl_realloc(NULL, job->size);
		break;
	}
	job->err = errno;
}

static void *worker_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (head == tail)
			pthread_cond_wait(&work, &lock);
		struct fz_job *job = &ring[head % RING];
		enum fz_job_kind kind = job->kind;
		pthread_mutex_unlock(&lock);
		if (kind == FZ_JOB_FREE)
			worker_free(job);
		else if (kind == FZ_JOB_ALLOC)
			worker_alloc(job);
		pthread_mutex_lock(&lock);
		if (kind == FZ_JOB_FREE)
			freed_slots[freed_count++] = job->slot;
		head++;
		pthread_cond_broadcast(&done);
		pthread_mutex_unlock(&lock);
		if (kind == FZ_JOB_EXIT)
			return NULL;
	}
}

void fz_worker_start(void)
{
	int rc = pthread_create(&thread, NULL, worker_main, NULL);
	if (rc != 0) {
		fprintf(stderr, "fuzz_tlmalloc: pthread_create: error %d\n",
			rc);
		abort();
	}
}

unsigned fz_worker_submit(const struct fz_job *job)
{
	pthread_mutex_lock(&lock);
	while (tail - head == RING)
		pthread_cond_wait(&done, &lock);
	unsigned ticket = tail++;
	ring[ticket % RING] = *job;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
	return ticket;
}

void fz_worker_wait(unsigned ticket, struct fz_job *job)
{
	pthread_mutex_lock(&lock);
	while ((int)(head - ticket) <= 0)
		pthread_cond_wait(&done, &lock);
	*job = ring[ticket % RING];
	pthread_mutex_unlock(&lock);
}

void fz_worker_sync(void)
{
	pthread_mutex_lock(&lock);
	while (head != tail)
		pthread_cond_wait(&done, &lock);
	pthread_mutex_unlock(&lock);
}

int fz_worker_done_frees(int *slots, int max)
{
	int n = 0;
	pthread_mutex_lock(&lock);
	for (; n < freed_count && n < max; n++)
		slots[n] = freed_slots[n];
	freed_count = 0;
	pthread_mutex_unlock(&lock);
	return n;
}

void fz_worker_restart(void)
{
	struct fz_job job = { .kind = FZ_JOB_EXIT };
	fz_worker_submit(&job);
	pthread_join(thread, NULL);
	fz_worker_start();
}

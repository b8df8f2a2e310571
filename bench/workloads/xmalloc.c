/*
 * xmalloc.c - many to many, after xmalloc-test: --threads threads (default
 * 8), half producers and half consumers (an odd one is a producer).  Each
 * producer allocates --iters blocks (default 1e7, quick 1e6) of assorted
 * small sizes (8..512 bytes), puts them in batches of 64 (a batch is a
 * malloc'd block too) and hands each full batch to the queues of the
 * consumers in turn; a consumer takes batches from its own queue and frees
 * every block in them, and the batch.  A block is freed by another thread
 * than the one that made it, and a consumer frees the blocks of every
 * producer.  A queue holds at most 64 batches: a producer waits when the
 * one it hands to is full.
 *
 * Checks: every block carries its size and tags (common.h's stamp) and is
 * verified by the consumer that frees it; blocks allocated == blocks
 * freed, and every queue ends empty.
 * Metrics: seconds, ops_per_sec (blocks: one malloc, one free on another
 * thread each).
 */
#include <stdatomic.h>

#include "common.h"

#define MIN_SIZE 8
#define MAX_SIZE 512
#define BATCH 64
#define DEPTH 64

struct batch {
	struct batch *next;
	long n;
	char *blocks[BATCH];
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t more, room;
	struct batch *head, *tail;
	long depth;
	char pad[64];
};

struct worker {
	long id, iters;
	long done;		/* blocks allocated or freed */
};

static struct queue *queues;
static long consumers;
static atomic_long producers_left;

static void put(struct queue *q, struct batch *b)
{
	pthread_mutex_lock(&q->lock);
	while (q->depth == DEPTH)
		pthread_cond_wait(&q->room, &q->lock);
	b->next = NULL;
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->depth++;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
}

/* The next batch, or NULL when every producer is done and q is empty. */
static struct batch *take(struct queue *q)
{
	struct batch *b;

	pthread_mutex_lock(&q->lock);
	while (!q->head && atomic_load(&producers_left) > 0)
		pthread_cond_wait(&q->more, &q->lock);
	b = q->head;
	if (b) {
		q->head = b->next;
		if (!q->head)
			q->tail = NULL;
		q->depth--;
		pthread_cond_signal(&q->room);
	}
	pthread_mutex_unlock(&q->lock);
	return b;
}

static struct batch *new_batch(void)
{
	struct batch *b = (struct batch *)bench_malloc(sizeof(*b));

	b->n = 0;
	return b;
}

static void *produce(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t rng = bench_seed((uint64_t)w->id);
	struct batch *b = new_batch();
	long to = w->id % consumers;
	long done = 0;

	for (long i = 0; i < w->iters; i++) {
		b->blocks[b->n++] = bench_stamped_block(&rng, MIN_SIZE,
							MAX_SIZE);
		done++;
		if (b->n == BATCH || i == w->iters - 1) {
			put(&queues[to], b);
			to = (to + 1) % consumers;
			if (i < w->iters - 1)
				b = new_batch();
		}
	}
	w->done = done;	/* once: the workers' records share cache lines */
	if (atomic_fetch_sub(&producers_left, 1) == 1)
		for (long c = 0; c < consumers; c++) {
			/* Under the lock: no consumer misses the news. */
			pthread_mutex_lock(&queues[c].lock);
			pthread_cond_broadcast(&queues[c].more);
			pthread_mutex_unlock(&queues[c].lock);
		}
	return NULL;
}

static void *consume(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct batch *b;

	while ((b = take(&queues[w->id]))) {
		for (long i = 0; i < b->n; i++) {
			bench_stamp_checked(b->blocks[i], MIN_SIZE, MAX_SIZE);
			free(b->blocks[i]);
		}
		w->done += b->n;
		free(b);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, producers;
	long made = 0, freed = 0;
	const struct bench_opt opts[] = {
		{ "--threads", "threads, half of them producers (default 8)",
		  &threads, NULL },
		{ "--iters", "blocks per producer (default 1e7, quick 1e6)",
		  &iters, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	pthread_t *tid;
	double t0, secs;

	bench_parse(argc, argv, "Producer threads hand batches of small "
		    "blocks to consumer threads that free them "
		    "(xmalloc-test).", opts);
	bench_pick(&threads, 8, 8);
	bench_pick(&iters, 10000000, 1000000);
	bench_require(threads >= 2 && iters >= 1, argv[0],
		      "--threads must be >= 2 and --iters >= 1");
	producers = (threads + 1) / 2;
	consumers = threads - producers;
	queues = (struct queue *)calloc((size_t)consumers, sizeof(*queues));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	tid = (pthread_t *)calloc((size_t)threads, sizeof(*tid));
	if (!queues || !w || !tid)
		bench_fail("calloc returned NULL");
	for (long c = 0; c < consumers; c++) {
		pthread_mutex_init(&queues[c].lock, NULL);
		pthread_cond_init(&queues[c].more, NULL);
		pthread_cond_init(&queues[c].room, NULL);
	}
	atomic_store(&producers_left, producers);

	t0 = bench_now();
	for (long t = 0; t < threads; t++) {
		int producer = t < producers;

		w[t] = (struct worker){ producer ? t : t - producers, iters,
					0 };
		if (pthread_create(&tid[t], NULL, producer ? produce : consume,
				   &w[t]))
			bench_fail("pthread_create failed for thread %ld", t);
	}
	for (long t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++)
		*(t < producers ? &made : &freed) += w[t].done;
	if (made != producers * iters || freed != made)
		bench_fail("%ld blocks allocated and %ld freed, expected %ld",
			   made, freed, producers * iters);
	for (long c = 0; c < consumers; c++) {
		if (queues[c].head)
			bench_fail("queue %ld not empty at the end", c);
		pthread_mutex_destroy(&queues[c].lock);
		pthread_cond_destroy(&queues[c].more);
		pthread_cond_destroy(&queues[c].room);
	}
	free(queues);
	free(w);
	free(tid);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", made / secs, "ops/s");
	return bench_check_ok();
}

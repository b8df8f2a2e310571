/*
 * dlopen.c - the dlopen build of tlmalloc (libtlmalloc-dlopen.so) loads
 * with dlopen(RTLD_NOW | RTLD_LOCAL) and works from several threads.
 *
 *   install_dlopen LIBRARY VERSION [INITIAL_EXEC_LIBRARY]
 *
 * Why that build exists: libtlmalloc.so reaches its thread-local data with
 * the initial-exec TLS model, which needs room in the static TLS block the
 * C library sets up at start-up.  Loaded at start-up (linked, preloaded)
 * it always gets that room; loaded later with dlopen it only gets what is
 * left of a small surplus, and once other such libraries have used it up,
 * dlopen fails with "cannot allocate memory in static TLS block".  The
 * dlopen build uses the global-dynamic model, whose TLS is allocated per
 * thread on first use, so any dlopen can load it.
 *
 * Given INITIAL_EXEC_LIBRARY (libtlmalloc.so), the program shows it: it
 * dlopens copies of that library until one fails for want of static TLS,
 * and only then loads LIBRARY, which must still load and work.
 *
 * The test proper: tl_version() is VERSION; threads, two of them started
 * before the dlopen (their TLS for the library is made lazily), allocate
 * blocks of many sizes with tl_malloc, fill them, and free them with
 * tl_free, half from another thread; every block keeps its contents.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define EARLY_THREADS 2
#define BLOCKS 1000
#define ROUNDS 10
#define MAX_COPIES 64
#define HUGE_BLOCK (256 * 1024)

static void *(*tl_malloc_p)(size_t);
static void (*tl_free_p)(void *);
static const char *(*tl_version_p)(void);

static pthread_barrier_t start;
static pthread_barrier_t round_done;
static unsigned char *blocks[THREADS][BLOCKS];

static void fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	exit(1);
}

static size_t block_size(int i)
{
	return i % 97 == 0 ? HUGE_BLOCK + (size_t)i : 1 + (size_t)(i * 37) % 3000;
}

static unsigned char block_byte(int t, int i, int round)
{
	return (unsigned char)(t * 31 + i + round * 7);
}

static int block_intact(int t, int i, int round)
{
	const unsigned char *p = blocks[t][i];
	size_t n = block_size(i);
	unsigned char want = block_byte(t, i, round);

	for (size_t k = 0; k < n; k++)
		if (p[k] != want)
			return 0;
	return 1;
}

/* Each round: fill BLOCKS blocks; then free the even ones of one's own
 * and the odd ones of the next thread, checking them first.  A failure
 * ends the process (the other threads would wait at a barrier). */
static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	int next = (t + 1) % THREADS;

	pthread_barrier_wait(&start);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < BLOCKS; i++) {
			blocks[t][i] = tl_malloc_p(block_size(i));
			if (!blocks[t][i])
				fail("tl_malloc returned NULL");
			memset(blocks[t][i], block_byte(t, i, round),
			       block_size(i));
		}
		pthread_barrier_wait(&round_done);
		for (int i = 0; i < BLOCKS; i++) {
			int owner = i % 2 == 0 ? t : next;
			if (!block_intact(owner, i, round))
				fail("a block lost its contents");
			tl_free_p(blocks[owner][i]);
		}
		pthread_barrier_wait(&round_done);
	}
	return NULL;
}

static void *symbol(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "FAIL: dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) &&
	    fread(data, 1, (size_t)n, f) == (size_t)n)
		*size = (size_t)n;
	else {
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

static int write_file(const char *path, const char *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	int ok = fwrite(data, 1, size, f) == size;
	return fclose(f) == 0 && ok;
}

/* dlopen copies of the initial-exec library (each copy is a library of
 * its own to the loader) until one fails; returns how many loaded, or -1
 * if none failed. */
static int use_up_static_tls(const char *ie_library)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	size_t size;
	char *data = read_file(ie_library, &size);
	int loaded = -1;

	if (!data)
		fail("cannot read the initial-exec library");
	snprintf(dir, sizeof(dir), "%s/tlmalloc-dlopen.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		fail("mkdtemp");
	for (int i = 0; i < MAX_COPIES && loaded < 0; i++) {
		snprintf(path, sizeof(path), "%s/initial-exec-%d.so", dir, i);
		if (!write_file(path, data, size))
			fail("cannot write a copy of the library");
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
			printf("initial-exec copy %d: %s\n", i + 1, dlerror());
			loaded = i;
		}
		unlink(path);
	}
	rmdir(dir);
	free(data);
	return loaded;
}

static void load(const char *library)
{
	void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
		exit(1);
	}
	tl_malloc_p = (void *(*)(size_t))symbol(lib, "tl_malloc");
	tl_free_p = (void (*)(void *))symbol(lib, "tl_free");
	tl_version_p = (const char *(*)(void))symbol(lib, "tl_version");
	printf("dlopen %s: ok\n", library);
}

static void start_thread(pthread_t *thread, int t)
{
	if (pthread_create(thread, NULL, worker, (void *)(intptr_t)t) != 0)
		fail("pthread_create");
}

int main(int argc, char **argv)
{
	pthread_t threads[THREADS];

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s LIBRARY VERSION [INITIAL_EXEC_LIBRARY]\n",
			argv[0]);
		return 2;
	}
	if (argc == 4) {
		int loaded = use_up_static_tls(argv[3]);
		if (loaded < 0)
			printf("static TLS not used up by %d initial-exec copies: "
			       "nothing to compare on this system\n", MAX_COPIES);
		else
			printf("static TLS used up after %d initial-exec copies\n",
			       loaded);
	}

	pthread_barrier_init(&start, NULL, THREADS + 1);
	pthread_barrier_init(&round_done, NULL, THREADS);
	for (int t = 0; t < EARLY_THREADS; t++)
		start_thread(&threads[t], t);
	load(argv[1]);
	for (int t = EARLY_THREADS; t < THREADS; t++)
		start_thread(&threads[t], t);

	if (strcmp(tl_version_p(), argv[2]) != 0) {
		fprintf(stderr, "FAIL: tl_version() is %s, expected %s\n",
			tl_version_p(), argv[2]);
		return 1;
	}
	printf("tl_version: %s\n", tl_version_p());
	pthread_barrier_wait(&start);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	printf("%d threads x %d rounds x %d blocks (half freed by another "
	       "thread): contents kept\n", THREADS, ROUNDS, BLOCKS);
	return 0;
}

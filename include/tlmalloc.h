/*
 * tlmalloc.h - the public API of tlmalloc, a thread-caching malloc for Linux.
 *
 * The library also exports the standard names (malloc, free, operator new,
 * ...), so linking with -ltlmalloc or preloading libtlmalloc.so replaces the
 * system allocator.  The tl_ names below are the same allocator under names
 * of its own: they work whether or not the standard names are overridden
 * (for example in a ThreadSanitizer build, which keeps its own malloc).
 *
 * Every function here is thread-safe.  Semantics follow glibc: NULL and
 * errno == ENOMEM on failure, EINVAL for a bad alignment, tl_free(NULL) is a
 * no-op and tl_free preserves errno.
 */
#ifndef TLMALLOC_H
#define TLMALLOC_H

#include <stddef.h>

#define TLMALLOC_VERSION_MAJOR 0
#define TLMALLOC_VERSION_MINOR 1
#define TLMALLOC_VERSION_PATCH 0
/* One number, comparable: major * 10000 + minor * 100 + patch. */
#define TLMALLOC_VERSION \
	(TLMALLOC_VERSION_MAJOR * 10000 + TLMALLOC_VERSION_MINOR * 100 + \
	 TLMALLOC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TL_API __attribute__((visibility("default")))
#define TL_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define TL_API
#define TL_MALLOC_ATTR
#endif

/* The library's version as "major.minor.patch" (a static string). */
TL_API const char *tl_version(void);

TL_API TL_MALLOC_ATTR void *tl_malloc(size_t size);
TL_API TL_MALLOC_ATTR void *tl_calloc(size_t count, size_t size);
TL_API void *tl_realloc(void *ptr, size_t size);
TL_API void *tl_reallocarray(void *ptr, size_t count, size_t size);
TL_API void tl_free(void *ptr);
/* free with the size (and alignment) the block was asked for: a hint. */
TL_API void tl_free_sized(void *ptr, size_t size);
TL_API void tl_free_aligned_sized(void *ptr, size_t alignment, size_t size);

TL_API TL_MALLOC_ATTR void *tl_aligned_alloc(size_t alignment, size_t size);
TL_API int tl_posix_memalign(void **out, size_t alignment, size_t size);
TL_API TL_MALLOC_ATTR void *tl_memalign(size_t alignment, size_t size);
TL_API TL_MALLOC_ATTR void *tl_valloc(size_t size);
TL_API TL_MALLOC_ATTR void *tl_pvalloc(size_t size);

/* Bytes usable at ptr (at least what was asked for); 0 for NULL. */
TL_API size_t tl_usable_size(const void *ptr);

/*
 * Options (docs/options.md lists them; TLMALLOC_<NAME> in the environment
 * sets them at start-up): 0 on success, EINVAL for an unknown name, a value
 * out of range, or a NULL value pointer.
 */
TL_API int tl_option_get(const char *name, long *value);
TL_API int tl_option_set(const char *name, long value);

/* Print tlmalloc's statistics to stderr (also at exit with show_stats). */
TL_API void tl_stats_print(void);

/*
 * Give free memory back to the OS now instead of after the purge delay.
 * Returns 1 if memory was released, else 0 (malloc_trim's convention).
 */
TL_API int tl_trim(void);

#ifdef __cplusplus
}
#endif

#endif /* TLMALLOC_H */

/*
 * alloc_api.h - the allocation API under test, by one set of macro names.
 *
 * The same test source checks the standard names (malloc, free, ... which
 * are tlmalloc's when the test links the tlmalloc library) or, built with
 * TL_TEST_TL_NAMES, the tl_ names.  The ThreadSanitizer variants
 * (TL_TEST_TSAN) always use the tl_ names: under TSan the standard names
 * belong to the sanitizer runtime and tlmalloc_tsan exports only tl_ and ts_.
 *
 * free_sized and free_aligned_sized are C23, cfree is obsolete and pvalloc
 * glibc's, so the C library's headers may not declare them (musl's do not);
 * they are declared here.
 */
#ifndef TL_TEST_ALLOC_API_H
#define TL_TEST_ALLOC_API_H

#include <malloc.h>
#include <stdlib.h>
#include "tlmalloc.h"
#include "ts_malloc.h"

#if defined(TL_TEST_TSAN) && !defined(TL_TEST_TL_NAMES)
#define TL_TEST_TL_NAMES 1
#endif

#ifdef TL_TEST_TL_NAMES
#define T_NAMES "tl_"
#define T_MALLOC tl_malloc
#define T_CALLOC tl_calloc
#define T_REALLOC tl_realloc
#define T_REALLOCARRAY tl_reallocarray
#define T_FREE tl_free
#define T_FREE_SIZED tl_free_sized
#define T_FREE_ALIGNED_SIZED tl_free_aligned_sized
#define T_ALIGNED_ALLOC tl_aligned_alloc
#define T_POSIX_MEMALIGN tl_posix_memalign
#define T_MEMALIGN tl_memalign
#define T_VALLOC tl_valloc
#define T_PVALLOC tl_pvalloc
#define T_USABLE_SIZE tl_usable_size
/* There is no tl_cfree: the tl_ API has one name per operation. */
#define T_CFREE tl_free
#else
#define T_NAMES "standard "
#define T_MALLOC malloc
#define T_CALLOC calloc
#define T_REALLOC realloc
#define T_REALLOCARRAY reallocarray
#define T_FREE free
#define T_FREE_SIZED free_sized
#define T_FREE_ALIGNED_SIZED free_aligned_sized
#define T_ALIGNED_ALLOC aligned_alloc
#define T_POSIX_MEMALIGN posix_memalign
#define T_MEMALIGN memalign
#define T_VALLOC valloc
#define T_PVALLOC pvalloc
#define T_USABLE_SIZE malloc_usable_size
#define T_CFREE cfree

void free_sized(void *ptr, size_t size);
/* hardened_malloc's extension, which tlmalloc exports too */
size_t malloc_object_size(void *ptr);
size_t malloc_object_size_fast(void *ptr);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);
void cfree(void *ptr);
void *pvalloc(size_t size);
#endif

#endif /* TL_TEST_ALLOC_API_H */

/*
 * ts_malloc.h - the classic lock-versus-thread-local comparison API.
 *
 * ts_malloc_lock/ts_free_lock: one heap shared by every thread behind one
 * lock (the naive design, kept as a baseline; it uses tlmalloc's own heap
 * code, so the only difference from the thread-local path is the lock).
 * ts_malloc_nolock/ts_free_nolock: tlmalloc's thread-local path.
 * A block must be freed by the family that allocated it.
 *
 * get_data_segment_size: bytes tlmalloc holds from the OS (mapped and not
 * purged), over both families and the standard API.
 * get_data_segment_free_space_size: how many of those bytes hold no live
 * block.  Both are snapshots; call them when the threads are quiet.
 */
#ifndef TS_MALLOC_H
#define TS_MALLOC_H

#include <stddef.h>
#include "tlmalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

TL_API TL_MALLOC_ATTR void *ts_malloc_lock(size_t size);
TL_API void ts_free_lock(void *ptr);
TL_API TL_MALLOC_ATTR void *ts_malloc_nolock(size_t size);
TL_API void ts_free_nolock(void *ptr);

TL_API unsigned long get_data_segment_size(void);
TL_API unsigned long get_data_segment_free_space_size(void);

#ifdef __cplusplus
}
#endif

#endif /* TS_MALLOC_H */

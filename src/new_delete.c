/*
 * new_delete.c - every C++ operator new and delete, in C, under their
 * mangled names (Itanium C++ ABI, size_t = unsigned long).
 *
 * Written in C so that libtlmalloc needs no C++ runtime: a C program that
 * preloads it does not load libstdc++.  A failing operator new calls the
 * new-handler and throws std::bad_alloc through libstdc++'s own
 * std::get_new_handler and std::__throw_bad_alloc, referenced weakly: any
 * program that calls operator new has libstdc++ loaded, so they resolve.
 * (If libstdc++ arrives later by dlopen, a failing new aborts instead.)
 * The nothrow forms return NULL; the deletes ignore the size and alignment
 * hints, since a block knows its page.  Built with -fexceptions, so a
 * handler's exception passes through.
 */
#include <stdlib.h>

#include "tlmalloc.h"
#include "tlmalloc/internal.h"

#ifndef TL_NO_OVERRIDE

typedef void (*tl_new_handler)(void);
extern tl_new_handler _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

#define TL_EXPORT __attribute__((visibility("default")))

/* The new-handler loop; NULL only for the nothrow forms. */
static void *new_retry(size_t size, size_t alignment, bool nothrow)
{
	for (;;) {
		void *p = alignment == 0 ? tl_malloc(size)
					 : tl_aligned_alloc(alignment, size);
		if (tl_likely(p != NULL))
			return p;
		tl_new_handler handler = _ZSt15get_new_handlerv != NULL
						 ? _ZSt15get_new_handlerv()
						 : NULL;
		if (handler != NULL) {
			handler();
			continue;
		}
		if (nothrow)
			return NULL;
		if (_ZSt17__throw_bad_allocv != NULL)
			_ZSt17__throw_bad_allocv();
		tl_fatal("operator new", NULL, "out of memory, no C++ runtime");
	}
}

TL_EXPORT void *_Znwm(size_t n);
TL_EXPORT void *_Znam(size_t n);
TL_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
TL_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
TL_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al);
TL_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al);
TL_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al,
						   const void *tag);
TL_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al,
						   const void *tag);

/* operator new(size_t) */
void *_Znwm(size_t n)
{
	void *p = tl_malloc(n);
	return tl_likely(p != NULL) ? p : new_retry(n, 0, false);
}

/* operator new[](size_t) */
void *_Znam(size_t n)
{
	return _Znwm(n);
}

/* operator new(size_t, const std::nothrow_t &) */
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag)
{
	(void)tag;
	void *p = tl_malloc(n);
	return tl_likely(p != NULL) ? p : new_retry(n, 0, true);
}

/* operator new[](size_t, const std::nothrow_t &) */
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag)
{
	return _ZnwmRKSt9nothrow_t(n, tag);
}

/* operator new(size_t, std::align_val_t) */
void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
	return new_retry(n, al, false);
}

/* operator new[](size_t, std::align_val_t) */
void *_ZnamSt11align_val_t(size_t n, size_t al)
{
	return new_retry(n, al, false);
}

/* operator new(size_t, std::align_val_t, const std::nothrow_t &) */
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *tag)
{
	(void)tag;
	return new_retry(n, al, true);
}

/* operator new[](size_t, std::align_val_t, const std::nothrow_t &) */
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *tag)
{
	(void)tag;
	return new_retry(n, al, true);
}

#endif /* TL_NO_OVERRIDE */

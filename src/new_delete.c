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
 * The nothrow forms return NULL.  A delete needs no hint, since a block
 * knows its page; the sized deletes check the size they are given (the
 * default and secure builds): a block deleted through a pointer to
 * another type is reported (free.c, tl_free_sized_slow), the aligned
 * ones at the class their new took.  Built with -fexceptions, so a
 * handler's exception passes through.
 */
#include <stdlib.h>

#include "tlmalloc.h"
#include "tlmalloc/fastpath.h"

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

TL_EXPORT void _ZdlPv(void *p);
TL_EXPORT void _ZdaPv(void *p);
TL_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
TL_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);
TL_EXPORT void _ZdlPvm(void *p, size_t n);
TL_EXPORT void _ZdaPvm(void *p, size_t n);
TL_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al);
TL_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al);
TL_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al,
						   const void *tag);
TL_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al,
						   const void *tag);
TL_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al);
TL_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al);

/* operator delete(void *) */
void _ZdlPv(void *p)
{
	tl_free_local(p);
}

/* operator delete[](void *) */
void _ZdaPv(void *p)
{
	tl_free_local(p);
}

/* operator delete(void *, const std::nothrow_t &) */
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
	(void)tag;
	tl_free_local(p);
}

/* operator delete[](void *, const std::nothrow_t &) */
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
	(void)tag;
	tl_free_local(p);
}

/* operator delete(void *, size_t) */
void _ZdlPvm(void *p, size_t n)
{
	tl_free_sized_local("operator delete", p, n);
}

/* operator delete[](void *, size_t) */
void _ZdaPvm(void *p, size_t n)
{
	tl_free_sized_local("operator delete[]", p, n);
}

/* operator delete(void *, std::align_val_t) */
void _ZdlPvSt11align_val_t(void *p, size_t al)
{
	(void)al;
	tl_free_local(p);
}

/* operator delete[](void *, std::align_val_t) */
void _ZdaPvSt11align_val_t(void *p, size_t al)
{
	(void)al;
	tl_free_local(p);
}

/* operator delete(void *, std::align_val_t, const std::nothrow_t &) */
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *tag)
{
	(void)al;
	(void)tag;
	tl_free_local(p);
}

/* operator delete[](void *, std::align_val_t, const std::nothrow_t &) */
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *tag)
{
	(void)al;
	(void)tag;
	tl_free_local(p);
}

/* The aligned sized deletes: the check at the alignment, then free. */
static void delete_aligned_sized(const char *call, void *p, size_t n,
				 size_t al)
{
#if TL_CHECKS
	tl_free_sized_slow(call, p, n, al);
#else
	(void)call;
	(void)n;
	(void)al;
	tl_free_local(p);
#endif
}

/* operator delete(void *, size_t, std::align_val_t) */
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	delete_aligned_sized("operator delete", p, n, al);
}

/* operator delete[](void *, size_t, std::align_val_t) */
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	delete_aligned_sized("operator delete[]", p, n, al);
}

#endif /* TL_NO_OVERRIDE */

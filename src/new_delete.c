/*
 * new_delete.c - every C++ operator new and delete, in C, under their
 * mangled names (Itanium C++ ABI, size_t = unsigned long).
 *
 * Written in C so that libtlmalloc needs no C++ runtime: a C program that
 * preloads it does not load libstdc++.  A failing operator new calls the
 * new-handler (std::get_new_handler) and throws std::bad_alloc through the
 * C++ ABI that libstdc++ (libsupc++) and libc++ (libc++abi) both provide:
 * __cxa_allocate_exception, the class's vtable and typeinfo, __cxa_throw.
 * The shared libraries reference them weakly: any program that calls
 * operator new has its C++ runtime loaded, so they resolve.  (If it arrives
 * later by dlopen, or is linked into the program and not exported, a
 * failing new aborts with a message instead.)  The static archives
 * reference them strongly: a weak reference pulls no member out of
 * libstdc++.a or libc++abi.a, so a static C++ program that never threw a
 * std::bad_alloc of its own would have had none to throw (this object is
 * linked only into programs that call operator new or delete).
 * The nothrow forms return NULL.  A delete needs no hint, since a block
 * knows its page; the sized deletes check the size they are given (the
 * default and secure builds): a block deleted through a pointer to
 * another type is reported (free.c, tl_free_sized_slow), the aligned
 * ones at the class their new took.  Built with -fexceptions, so a
 * handler's exception passes through.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tlmalloc.h"
#include "tlmalloc/fastpath.h"

#ifndef TL_NO_OVERRIDE

/* TL_CXX_HAS(sym): whether a weak reference resolved (always, if strong) */
#if TL_STATIC_ARCHIVE
#define TL_CXX_ABI
#define TL_CXX_HAS(sym) true
#else
#define TL_CXX_ABI __attribute__((weak))
#define TL_CXX_HAS(sym) ((sym) != NULL)
#endif

typedef void (*tl_new_handler)(void);
/* std::get_new_handler() */
extern tl_new_handler _ZSt15get_new_handlerv(void) TL_CXX_ABI;
/* std::bad_alloc's vtable, typeinfo and destructor, and the ABI's throw */
extern const char _ZTVSt9bad_alloc[] TL_CXX_ABI;
extern const char _ZTISt9bad_alloc[] TL_CXX_ABI;
extern void _ZNSt9bad_allocD1Ev(void *self) TL_CXX_ABI;
extern void *__cxa_allocate_exception(size_t size) TL_CXX_ABI;
extern void __cxa_throw(void *object, void *type, void (*dtor)(void *))
	TL_CXX_ABI __attribute__((noreturn));

/*
 * throw std::bad_alloc(): the object is its vtable pointer alone (the
 * class has no data), which points two words into the vtable symbol, past
 * the offset to top and the typeinfo (Itanium C++ ABI, 2.5.2).
 */
static void throw_bad_alloc(void)
{
	if (!TL_CXX_HAS(__cxa_throw) || !TL_CXX_HAS(__cxa_allocate_exception) ||
	    !TL_CXX_HAS(_ZTVSt9bad_alloc) || !TL_CXX_HAS(_ZTISt9bad_alloc) ||
	    !TL_CXX_HAS(_ZNSt9bad_allocD1Ev))
		return;
	void *e = __cxa_allocate_exception(sizeof(void *));
	*(const void **)e = _ZTVSt9bad_alloc + 2 * sizeof(void *);
	__cxa_throw(e, (void *)(uintptr_t)_ZTISt9bad_alloc,
		    _ZNSt9bad_allocD1Ev);
}

#define TL_EXPORT __attribute__((visibility("default")))

/* The new-handler loop; NULL only for the nothrow forms. */
static void *new_retry(size_t size, size_t alignment, bool nothrow)
{
	for (;;) {
		void *p = alignment == 0 ? tl_malloc(size)
					 : tl_aligned_alloc(alignment, size);
		if (tl_likely(p != NULL))
			return p;
		tl_new_handler handler = TL_CXX_HAS(_ZSt15get_new_handlerv)
						 ? _ZSt15get_new_handlerv()
						 : NULL;
		if (handler != NULL) {
			handler();
			continue;
		}
		if (nothrow)
			return NULL;
		throw_bad_alloc();
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

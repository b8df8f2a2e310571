/*
 * override_cxx.cc - every C++ operator new and delete, on the tl_ API.
 *
 * Written in C++ because a failing operator new must call the new-handler
 * and throw std::bad_alloc; the nothrow forms return nullptr instead.  The
 * sized and aligned deletes ignore the hints (a block knows its page).
 * Alignments up to 16 are what tl_malloc gives anyway.
 */
#include <cstddef>
#include <new>

#include "tlmalloc.h"

#define TL_EXPORT __attribute__((visibility("default")))

namespace {

void *new_or_throw(std::size_t size)
{
	for (;;) {
		void *p = tl_malloc(size);
		if (p != nullptr)
			return p;
		std::new_handler handler = std::get_new_handler();
		if (handler == nullptr)
			throw std::bad_alloc();
		handler();
	}
}

void *new_aligned_or_throw(std::size_t size, std::align_val_t al)
{
	for (;;) {
		void *p = tl_aligned_alloc(static_cast<std::size_t>(al), size);
		if (p != nullptr)
			return p;
		std::new_handler handler = std::get_new_handler();
		if (handler == nullptr)
			throw std::bad_alloc();
		handler();
	}
}

void *new_nothrow(std::size_t size) noexcept
{
	try {
		return new_or_throw(size);
	} catch (...) {
		return nullptr;
	}
}

void *new_aligned_nothrow(std::size_t size, std::align_val_t al) noexcept
{
	try {
		return new_aligned_or_throw(size, al);
	} catch (...) {
		return nullptr;
	}
}

} // namespace

TL_EXPORT void *operator new(std::size_t n) { return new_or_throw(n); }
TL_EXPORT void *operator new[](std::size_t n) { return new_or_throw(n); }
TL_EXPORT void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	return new_nothrow(n);
}
TL_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
	return new_nothrow(n);
}
TL_EXPORT void *operator new(std::size_t n, std::align_val_t al)
{
	return new_aligned_or_throw(n, al);
}
TL_EXPORT void *operator new[](std::size_t n, std::align_val_t al)
{
	return new_aligned_or_throw(n, al);
}
TL_EXPORT void *operator new(std::size_t n, std::align_val_t al,
			     const std::nothrow_t &) noexcept
{
	return new_aligned_nothrow(n, al);
}
TL_EXPORT void *operator new[](std::size_t n, std::align_val_t al,
			       const std::nothrow_t &) noexcept
{
	return new_aligned_nothrow(n, al);
}

TL_EXPORT void operator delete(void *p) noexcept { tl_free(p); }
TL_EXPORT void operator delete[](void *p) noexcept { tl_free(p); }
TL_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept
{
	tl_free(p);
}
TL_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept
{
	tl_free(p);
}
TL_EXPORT void operator delete(void *p, std::size_t n) noexcept
{
	tl_free_sized(p, n);
}
TL_EXPORT void operator delete[](void *p, std::size_t n) noexcept
{
	tl_free_sized(p, n);
}
TL_EXPORT void operator delete(void *p, std::align_val_t al) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), 0);
}
TL_EXPORT void operator delete[](void *p, std::align_val_t al) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), 0);
}
TL_EXPORT void operator delete(void *p, std::align_val_t al,
			       const std::nothrow_t &) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), 0);
}
TL_EXPORT void operator delete[](void *p, std::align_val_t al,
				 const std::nothrow_t &) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), 0);
}
TL_EXPORT void operator delete(void *p, std::size_t n,
			       std::align_val_t al) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), n);
}
TL_EXPORT void operator delete[](void *p, std::size_t n,
				 std::align_val_t al) noexcept
{
	tl_free_aligned_sized(p, static_cast<std::size_t>(al), n);
}

/*
 * first_operation_ops.cc - operator new/delete forms for first_operation.c:
 * each function makes its form the calling thread's first allocation call,
 * checks the result, and releases what it allocated.
 */
#include <cstdint>
#include <cstring>
#include <new>
#include "check.h"
#include "first_operation_ops.h"

namespace {

constexpr std::size_t kSize = 300;
constexpr std::size_t kAlign = 512;
const std::align_val_t kAl{ kAlign };

void use(void *p, std::size_t alignment)
{
	CHECK(p != nullptr && is_aligned(p, alignment));
	std::memset(p, 0x3c, kSize);
}

unsigned char *check_block(void *arg)
{
	unsigned char *p = static_cast<unsigned char *>(arg);

	for (std::size_t i = 0; i < kSize; i++)
		CHECK(p[i] == 0x5d);
	return p;
}

void *fill(void *p)
{
	CHECK(p != nullptr);
	std::memset(p, 0x5d, kSize);
	return p;
}

} // namespace

void *cxx_prepare(void)
{
	return fill(::operator new(kSize));
}

void *cxx_prepare_array(void)
{
	return fill(::operator new[](kSize));
}

void *cxx_prepare_aligned(void)
{
	return fill(::operator new(kSize, kAl));
}

void cxx_first_new(void *)
{
	void *p = ::operator new(kSize);

	use(p, 16);
	::operator delete(p);
}

void cxx_first_new_array(void *)
{
	void *p = ::operator new[](kSize);

	use(p, 16);
	::operator delete[](p, kSize);
}

void cxx_first_new_nothrow(void *)
{
	void *p = ::operator new(kSize, std::nothrow);

	use(p, 16);
	::operator delete(p, std::nothrow);
}

void cxx_first_new_aligned(void *)
{
	void *p = ::operator new(kSize, kAl);

	use(p, kAlign);
	::operator delete(p, kAl);
}

void cxx_first_new_array_aligned(void *)
{
	void *p = ::operator new[](kSize, kAl);

	use(p, kAlign);
	::operator delete[](p, kSize, kAl);
}

void cxx_first_new_aligned_nothrow(void *)
{
	void *p = ::operator new(kSize, kAl, std::nothrow);

	use(p, kAlign);
	::operator delete(p, kAl, std::nothrow);
}

void cxx_first_new_bad_alloc(void *)
{
	bool thrown = false;

	try {
		void *p = ::operator new(SIZE_MAX);
		CHECKF(p == nullptr, "operator new(SIZE_MAX) returned %p", p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECK(thrown);
}

void cxx_first_delete(void *arg)
{
	::operator delete(check_block(arg));
}

void cxx_first_delete_sized(void *arg)
{
	::operator delete(check_block(arg), kSize);
}

void cxx_first_delete_array(void *arg)
{
	::operator delete[](check_block(arg));
}

void cxx_first_delete_aligned(void *arg)
{
	::operator delete(check_block(arg), kAl);
}

void cxx_first_delete_sized_aligned(void *arg)
{
	::operator delete(check_block(arg), kSize, kAl);
}

/*
 * cxx_bad_alloc.cc - operator new's failure in a program whose only use of
 * the C++ library is <new>: std::bad_alloc thrown, the new-handler called
 * first.  tlmalloc's operator new is C (new_delete.c) and reaches the C++
 * runtime through its ABI (__cxa_throw, std::bad_alloc's vtable and
 * typeinfo, std::get_new_handler).  cxx_operators.cc checks the same
 * among many other things, but it uses containers, which link in
 * libstdc++'s own throw helpers; a program this small links in nothing of
 * the runtime that operator new itself does not ask for.  So this one
 * catches, linked statically (unit.cxx_static_min.*) or against libc++
 * (platform.musl_libcxx_bad_alloc, built by zig for static musl), an
 * operator new that can only abort ("no C++ runtime").
 */
#include <cstdint>
#include <new>
#include "check.h"

namespace {

int handler_calls;

void counting_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);
}

// Impossible sizes: each form must throw std::bad_alloc.
void bad_alloc_not_thrown()
{
	const std::size_t n = SIZE_MAX / 2;
	int caught = 0;

	try {
		void *p = ::operator new(n);
		CHECKF(p == nullptr, "operator new(%zu) returned %p", n, p);
	} catch (const std::bad_alloc &e) {
		CHECK(e.what() != nullptr);
		caught++;
	}
	try {
		void *p = ::operator new[](n);
		CHECKF(p == nullptr, "operator new[](%zu) returned %p", n, p);
	} catch (const std::bad_alloc &) {
		caught++;
	}
	try {
		void *p = ::operator new(n, std::align_val_t{ 64 });
		CHECKF(p == nullptr, "aligned new(%zu) returned %p", n, p);
	} catch (const std::exception &) {	// through its base, too
		caught++;
	}
	CHECKF(caught == 3, "%d of 3 forms threw std::bad_alloc", caught);
	CHECK(::operator new(n, std::nothrow) == nullptr);
}

// The handler runs once (it removes itself), then the throw.
void new_handler_not_called()
{
	bool thrown = false;

	handler_calls = 0;
	std::set_new_handler(counting_handler);
	try {
		(void)::operator new(SIZE_MAX / 2);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECKF(thrown && handler_calls == 1, "thrown %d, handler called %d "
	       "times", thrown, handler_calls);
	void *p = ::operator new(100);
	CHECK(p != nullptr);
	::operator delete(p);
}

const test_case tests[] = {
	TEST_CASE(bad_alloc_not_thrown),
	TEST_CASE(new_handler_not_called),
};

} // namespace

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}

/*
 * cxx_operators.cc - every C++ operator new/delete form, linked against
 * tlmalloc (which exports them all).
 *
 * Plain, array, nothrow, sized, aligned, sized+aligned and aligned nothrow:
 * each result aligned (16, or the requested alignment), usable and writable;
 * std::bad_alloc on impossible sizes (after calling the new-handler);
 * nullptr and no exception from the nothrow forms; delete of nullptr a no-op.
 * With TL_TEST_EXPECT_TLMALLOC the operators must resolve to libtlmalloc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <cstdint>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>
#include "check.h"
#include "tlmalloc.h"

namespace {

constexpr std::size_t kMallocAlign = 16;
constexpr std::size_t kMaxAlign = std::size_t(4) << 20;
const std::size_t kImpossible[] = { SIZE_MAX, SIZE_MAX / 2 + 1,
				    std::size_t(PTRDIFF_MAX) + 1 };

void check_block(void *p, std::size_t n, std::size_t alignment)
{
	CHECKF(p != nullptr, "size %zu", n);
	CHECKF(is_aligned(p, alignment), "%p size %zu alignment %zu", p, n,
	       alignment);
	CHECKF(tl_usable_size(p) >= n, "usable %zu < %zu", tl_usable_size(p),
	       n);
	std::memset(p, 0x6b, n);
}

std::size_t size_at(std::size_t i)
{
	return i < 600 ? i * 3 : (i - 600) * 40000 + 1;
}

void new_misaligned()
{
	const std::nothrow_t &nt = std::nothrow;

	for (std::size_t i = 0; i < 700; i++) {
		std::size_t n = size_at(i);
		void *p = ::operator new(n);
		void *q = ::operator new[](n);
		void *r = ::operator new(n, nt);
		void *s = ::operator new[](n, nt);

		check_block(p, n, kMallocAlign);
		check_block(q, n, kMallocAlign);
		check_block(r, n, kMallocAlign);
		check_block(s, n, kMallocAlign);
		if (i & 1) {
			::operator delete(p, n);
			::operator delete[](q, n);
		} else {
			::operator delete(p);
			::operator delete[](q);
		}
		::operator delete(r, nt);
		::operator delete[](s, nt);
	}
}

void aligned_round(std::size_t a, std::size_t n)
{
	const std::align_val_t al{ a };
	const std::nothrow_t &nt = std::nothrow;
	void *p = ::operator new(n, al);
	void *q = ::operator new[](n, al);
	void *r = ::operator new(n, al, nt);
	void *s = ::operator new[](n, al, nt);

	check_block(p, n, a);
	check_block(q, n, a);
	check_block(r, n, a);
	check_block(s, n, a);
	if (n & 1) {
		::operator delete(p, n, al);
		::operator delete[](q, n, al);
	} else {
		::operator delete(p, al);
		::operator delete[](q, al);
	}
	::operator delete(r, al, nt);
	::operator delete[](s, al, nt);
}

void aligned_new_misaligned()
{
	for (std::size_t a = 1; a <= kMaxAlign; a *= 2) {
		aligned_round(a, 1);
		aligned_round(a, a + 1);
		aligned_round(a, 3 * a);
		aligned_round(a, 100);
	}
}

struct alignas(256) Overaligned {
	unsigned char bytes[300];
};

/* new-expressions pick the aligned forms for over-aligned types. */
void overaligned_type_misaligned()
{
	for (int i = 1; i < 50; i++) {
		Overaligned *one = new Overaligned();
		Overaligned *many = new Overaligned[i];

		CHECK(is_aligned(one, alignof(Overaligned)));
		CHECK(is_aligned(many, alignof(Overaligned)));
		std::memset(many, 1, sizeof(Overaligned) * i);
		delete one;
		delete[] many;
	}
}

int handler_calls;

void counting_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);
}

template <typename F> void expect_bad_alloc(F alloc, std::size_t n)
{
	bool thrown = false;

	handler_calls = 0;
	std::set_new_handler(counting_handler);
	try {
		void *p = alloc(n);
		CHECKF(p == nullptr, "size %zu returned %p", n, p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	std::set_new_handler(nullptr);
	CHECKF(thrown, "size %zu: no std::bad_alloc", n);
	CHECKF(handler_calls == 1, "size %zu: new-handler called %d times", n,
	       handler_calls);
}

void new_no_bad_alloc()
{
	const std::align_val_t al{ 64 };

	for (std::size_t n : kImpossible) {
		expect_bad_alloc([](std::size_t k) {
			return ::operator new(k); }, n);
		expect_bad_alloc([](std::size_t k) {
			return ::operator new[](k); }, n);
		expect_bad_alloc([al](std::size_t k) {
			return ::operator new(k, al); }, n);
		expect_bad_alloc([al](std::size_t k) {
			return ::operator new[](k, al); }, n);
	}
}

template <typename F> void expect_nullptr(F alloc, std::size_t n)
{
	try {
		void *p = alloc(n);
		CHECKF(p == nullptr, "size %zu returned %p", n, p);
	} catch (...) {
		CHECKF(false, "size %zu: a nothrow form threw", n);
	}
}

void nothrow_new_throws()
{
	const std::align_val_t al{ 64 };
	const std::nothrow_t &nt = std::nothrow;

	for (std::size_t n : kImpossible) {
		expect_nullptr([&](std::size_t k) {
			return ::operator new(k, nt); }, n);
		expect_nullptr([&](std::size_t k) {
			return ::operator new[](k, nt); }, n);
		expect_nullptr([&](std::size_t k) {
			return ::operator new(k, al, nt); }, n);
		expect_nullptr([&](std::size_t k) {
			return ::operator new[](k, al, nt); }, n);
	}
}

void delete_null_crashes()
{
	const std::align_val_t al{ 64 };
	const std::nothrow_t &nt = std::nothrow;

	::operator delete(nullptr);
	::operator delete[](nullptr);
	::operator delete(nullptr, std::size_t(8));
	::operator delete[](nullptr, std::size_t(8));
	::operator delete(nullptr, al);
	::operator delete[](nullptr, al);
	::operator delete(nullptr, std::size_t(8), al);
	::operator delete[](nullptr, std::size_t(8), al);
	::operator delete(nullptr, nt);
	::operator delete[](nullptr, nt);
	::operator delete(nullptr, al, nt);
	::operator delete[](nullptr, al, nt);
	CHECK(tl_usable_size(nullptr) == 0);
}

/* Containers: many nodes and strings, contents checked after reshuffles. */
void containers_corrupt()
{
	std::map<std::string, std::vector<int>> m;

	for (int i = 0; i < 20000; i++)
		m[std::to_string(i * 7919 % 20000)].assign(i % 37, i);
	for (int i = 0; i < 20000; i += 2)
		m.erase(std::to_string(i));
	for (const auto &kv : m) {
		int k = std::stoi(kv.first);

		CHECK(k % 2 == 1);
		for (int v : kv.second)
			CHECK(v * 7919 % 20000 == k);
	}
	CHECK(m.size() == 10000);
}

#ifdef TL_TEST_EXPECT_TLMALLOC
void in_tlmalloc(const char *name, void *addr)
{
	Dl_info info;

	CHECKF(dladdr(addr, &info) != 0, "%s: no symbol", name);
	CHECKF(info.dli_fname && std::strstr(info.dli_fname, "libtlmalloc"),
	       "%s resolves to %s", name, info.dli_fname);
}

#define OP_IN_TLMALLOC(type, op) \
	in_tlmalloc(#op " " #type, \
		    reinterpret_cast<void *>(static_cast<type>(&::op)))

using std::align_val_t;
using std::nothrow_t;
using std::size_t;

void operators_not_replaced()
{
	OP_IN_TLMALLOC(void *(*)(size_t), operator new);
	OP_IN_TLMALLOC(void *(*)(size_t), operator new[]);
	OP_IN_TLMALLOC(void *(*)(size_t, const nothrow_t &), operator new);
	OP_IN_TLMALLOC(void *(*)(size_t, const nothrow_t &), operator new[]);
	OP_IN_TLMALLOC(void *(*)(size_t, align_val_t), operator new);
	OP_IN_TLMALLOC(void *(*)(size_t, align_val_t), operator new[]);
	OP_IN_TLMALLOC(void *(*)(size_t, align_val_t, const nothrow_t &),
		       operator new);
	OP_IN_TLMALLOC(void *(*)(size_t, align_val_t, const nothrow_t &),
		       operator new[]);
	OP_IN_TLMALLOC(void (*)(void *), operator delete);
	OP_IN_TLMALLOC(void (*)(void *), operator delete[]);
	OP_IN_TLMALLOC(void (*)(void *, size_t), operator delete);
	OP_IN_TLMALLOC(void (*)(void *, size_t), operator delete[]);
	OP_IN_TLMALLOC(void (*)(void *, align_val_t), operator delete);
	OP_IN_TLMALLOC(void (*)(void *, align_val_t), operator delete[]);
	OP_IN_TLMALLOC(void (*)(void *, size_t, align_val_t), operator delete);
	OP_IN_TLMALLOC(void (*)(void *, size_t, align_val_t),
		       operator delete[]);
	OP_IN_TLMALLOC(void (*)(void *, const nothrow_t &), operator delete);
	OP_IN_TLMALLOC(void (*)(void *, const nothrow_t &), operator delete[]);
	OP_IN_TLMALLOC(void (*)(void *, align_val_t, const nothrow_t &),
		       operator delete);
	OP_IN_TLMALLOC(void (*)(void *, align_val_t, const nothrow_t &),
		       operator delete[]);
}
#endif

const test_case tests[] = {
	TEST_CASE(new_misaligned),
	TEST_CASE(aligned_new_misaligned),
	TEST_CASE(overaligned_type_misaligned),
	TEST_CASE(new_no_bad_alloc),
	TEST_CASE(nothrow_new_throws),
	TEST_CASE(delete_null_crashes),
	TEST_CASE(containers_corrupt),
#ifdef TL_TEST_EXPECT_TLMALLOC
	TEST_CASE(operators_not_replaced),
#endif
};

} // namespace

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}

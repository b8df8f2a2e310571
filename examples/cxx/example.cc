/*
 * example.cc - using tlmalloc from C++: once the program is linked with
 * tlmalloc (find_package: CMakeLists.txt; pkg-config: Makefile), every
 * operator new and delete is tlmalloc's, so the standard containers,
 * strings and smart pointers allocate from it, in every thread.
 *
 * Prints the library's version, what it did, and "ok" at the end; exits
 * 1 if a result is wrong.
 */
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <tlmalloc.h>

namespace {

constexpr int threads = 4;
constexpr int words = 20000;

// Over-aligned: allocated by the aligned operator new.
struct alignas(64) counter {
	long value = 0;
};

// Each thread counts words in a map of strings: many small allocations
// of varied sizes.
long count_words(int seed)
{
	std::map<std::string, std::unique_ptr<counter>> counts;
	for (int i = 0; i < words; i++) {
		std::string word = "word-" + std::to_string((i * 7 + seed) % 997);
		auto &slot = counts[word];
		if (!slot)
			slot = std::make_unique<counter>();
		slot->value++;
	}
	long total = 0;
	for (const auto &entry : counts)
		total += entry.second->value;
	return total;
}

} // namespace

int main()
{
	std::printf("tlmalloc %s (header %d.%d.%d)\n", tl_version(),
		    TLMALLOC_VERSION_MAJOR, TLMALLOC_VERSION_MINOR,
		    TLMALLOC_VERSION_PATCH);

	// new is tlmalloc's: tl_usable_size accepts only tlmalloc's blocks
	// (given another allocator's, it ends the program).
	auto *numbers = new int[1000];
	std::printf("new int[1000] from tlmalloc: %zu usable bytes\n",
		    tl_usable_size(numbers));
	delete[] numbers;

	auto *aligned = new counter;
	bool aligned_ok = reinterpret_cast<std::uintptr_t>(aligned) % 64 == 0;
	delete aligned;
	if (!aligned_ok) {
		std::fprintf(stderr, "aligned new: not aligned to 64\n");
		return 1;
	}

	std::vector<long> totals(threads);
	std::vector<std::thread> pool;
	for (int t = 0; t < threads; t++)
		pool.emplace_back([t, &totals] { totals[t] = count_words(t); });
	for (auto &thread : pool)
		thread.join();
	for (int t = 0; t < threads; t++) {
		if (totals[t] != words) {
			std::fprintf(stderr, "thread %d counted %ld words\n",
				     t, totals[t]);
			return 1;
		}
	}
	std::printf("%d threads x %d words in std::map<std::string, ...>: "
		    "counts right\n", threads, words);
	std::printf("ok\n");
	return 0;
}

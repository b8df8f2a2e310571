/*
 * word_index.cc - the program cxx_compile.sh compiles and runs under
 * tlmalloc.
 *
 * Four std::threads each build a std::map from generated words to vectors
 * of positions, with std::string keys and shared_ptr values; the maps are
 * merged and checked.  Prints the counts and where operator new comes
 * from: "operator new libtlmalloc" when tlmalloc's replaces libstdc++'s.
 */
#include <dlfcn.h>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr int kWords = 50000;
constexpr int kDistinct = 1000;

using Index = std::map<std::string, std::shared_ptr<std::vector<int>>>;

void build(Index *index, int seed)
{
	for (int i = 0; i < kWords; i++) {
		std::string word = "w" + std::to_string((i * 7919 + seed) %
							kDistinct);
		auto &slot = (*index)[word];

		if (!slot)
			slot = std::make_shared<std::vector<int>>();
		slot->push_back(i);
	}
}

const char *operator_new_origin()
{
	Dl_info info;
	void *(*op)(std::size_t) = &::operator new;

	if (!dladdr(reinterpret_cast<void *>(op), &info) || !info.dli_fname)
		return "unknown";
	return std::strstr(info.dli_fname, "libtlmalloc") ? "libtlmalloc"
							   : info.dli_fname;
}

} // namespace

int main()
{
	std::vector<Index> parts(kThreads);
	std::vector<std::thread> threads;
	std::map<std::string, std::size_t> merged;
	std::size_t total = 0;

	for (int t = 0; t < kThreads; t++)
		threads.emplace_back(build, &parts[t], t);
	for (auto &t : threads)
		t.join();
	for (const auto &part : parts)
		for (const auto &kv : part)
			merged[kv.first] += kv.second->size();
	for (const auto &kv : merged)
		total += kv.second;
	std::printf("words %zu\ndistinct %zu\noperator new %s\n", total,
		    merged.size(), operator_new_origin());
	return 0;
}

/*
 * misuse_cxx.cc - the C++ misuses, as misuse.c: `misuse_cxx KIND SIZE`,
 * SIZE small (8 bytes), medium (4 KiB) or large (256 KiB).
 *
 *   sized_delete     an object deleted through a pointer to a type 32
 *                    bytes larger (a type confusion): the sized delete
 *                    gets the wrong size
 *   delete_array     new char[SIZE] released with delete, not delete[]:
 *                    the sized delete gets 1 byte
 *   double_delete    delete twice
 *
 * Built with -fsized-deallocation (C++14 and later do it by default).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

template <size_t N> struct Object {
	char bytes[N];
};

/* The compiler may drop a new and its delete whose pointer goes nowhere
 * (C++14 allows it): this one goes somewhere. */
template <typename T> static T *escape(T *p)
{
	__asm__ volatile("" : "+r"(p) : : "memory");
	return p;
}

template <size_t N> static void sized_delete()
{
	Object<N> *p = escape(new Object<N>);
	std::memset(p->bytes, 'b', N);
	delete reinterpret_cast<Object<N + 32> *>(escape(p));
}

template <size_t N> static void delete_array()
{
	char *p = escape(new char[N]);
	std::memset(p, 'b', N);
	delete escape(p);
}

template <size_t N> static void double_delete()
{
	Object<N> *p = escape(new Object<N>);
	delete escape(p);
	delete escape(p);
}

template <size_t N> static bool run(const char *kind)
{
	if (std::strcmp(kind, "sized_delete") == 0)
		sized_delete<N>();
	else if (std::strcmp(kind, "delete_array") == 0)
		delete_array<N>();
	else if (std::strcmp(kind, "double_delete") == 0)
		double_delete<N>();
	else
		return false;
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: misuse_cxx KIND SIZE\n");
		return 2;
	}
	bool known;
	if (std::strcmp(argv[2], "small") == 0)
		known = run<8>(argv[1]);
	else if (std::strcmp(argv[2], "medium") == 0)
		known = run<4096>(argv[1]);
	else if (std::strcmp(argv[2], "large") == 0)
		known = run<(256 << 10)>(argv[1]);
	else
		known = false;
	if (!known) {
		std::fprintf(stderr, "misuse_cxx: %s %s unknown\n", argv[1],
			     argv[2]);
		return 2;
	}
	std::printf("survived\n");
	return 0;
}

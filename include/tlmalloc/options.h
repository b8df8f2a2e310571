/*
 * options.h - every tunable of tlmalloc, declared once.
 *
 * TL_OPTIONS lists them: name, default, least and greatest value, and the
 * text docs/options.md is generated from (test/unit/options_doc.c prints
 * it; the test suite fails when the committed page differs).  Each is read
 * from the environment variable TLMALLOC_<NAME> at start-up, without
 * allocating, and can be read and set with tl_option_get/tl_option_set.
 * A value that is not a whole number in range prints a warning and keeps
 * the default.
 */
#ifndef TLMALLOC_OPTIONS_H
#define TLMALLOC_OPTIONS_H

#include "tlmalloc/atomic.h"
#include "tlmalloc/types.h"

#define TL_OPTIONS(X)                                                        \
	X(verbose, 0, 0, 1,                                                  \
	  "1: print diagnostics to stderr (a bad option value is always "   \
	  "reported; with this, also every OS mapping that fails).")         \
	X(show_stats, 0, 0, 1,                                               \
	  "1: print the statistics (tl_stats_print) to stderr at exit; "     \
	  "to a copy of it kept from start-up (descriptor 200 or above) "    \
	  "when the program has closed its stderr by then, as coreutils "    \
	  "do.")                                                             \
	X(purge_delay, 100, 0, 3600000,                                      \
	  "Milliseconds a free page stays resident before it is given back " \
	  "to the OS with madvise (0: at once).")                            \
	X(huge_pages, 0, 0, 2,                                               \
	  "Transparent huge pages (madvise MADV_HUGEPAGE) for the mappings " \
	  "made from then on: 1 for huge blocks (above 128 KiB: buffers of " \
	  "5-25 MiB replaced over and over took a seventh of the page "      \
	  "faults and 0.4x the time), 2 for every segment too (a busy "      \
	  "heap takes fewer TLB misses, but a huge page is resident whole, " \
	  "2 MiB on x86-64: a small program holds 2-4 MiB more, a thread's " \
	  "partly used pages up to 2 MiB each).  docs/design.md, \"Huge "    \
	  "pages\".  Needs the kernel's transparent huge pages set to "      \
	  "madvise or always; where the kernel has none it changes "         \
	  "nothing.  0: the kernel's own choice (with \"always\" it may use "\
	  "them anyway).")                                                   \
	X(park_heaps, 0, 0, 1,                                               \
	  "1: an exiting thread's heap is kept whole (parked) for the next " \
	  "thread to start, for up to purge_delay ms: a thread's start and " \
	  "exit cost a store a page and one lock, for more memory (each "    \
	  "parked heap keeps a partly used page of every class it used; "    \
	  "docs/design.md, \"Parked heaps\").  0: its pages are abandoned "  \
	  "at its exit, for any heap to adopt.")                             \
	X(kept_bytes, 0, 0, TL_SECURE ? 0 : 131072,                          \
	  "Kept blocks (docs/design.md, \"Kept blocks\"): bytes of each "    \
	  "size class (and at most 128 blocks) that a thread keeps of the "  \
	  "blocks of other threads' pages it frees, for its own next "       \
	  "mallocs of the class, instead of handing them back to their "     \
	  "pages: a server whose threads free each other's objects runs "    \
	  "on fewer, warmer blocks (server: 0.9x the time, 0.6x the peak "   \
	  "RSS with 32768), but a thread that frees soon what it took "      \
	  "from its list frees another thread's block each time (mstress: " \
	  "1.1x the time).  0: none.  Read when a thread's heap is made.  "  \
	  "The secure variant keeps none (it takes 0 alone).")               \
	X(fault_map, 0, 0, 1000000000,                                       \
	  "Fault injection for tests: the Nth OS mapping from now on fails " \
	  "as if the OS refused it (0: off).  Counts down; set it again to " \
	  "fail another.")                                                   \
	X(fault_oom, 0, 0, 1000000000,                                       \
	  "Fault injection for tests: from the Nth OS mapping from now on, " \
	  "every mapping fails as if the OS were out of memory, until it is "\
	  "set to 0 (0: off).")                                              \
	X(catch_foreign, 1, 0, 1,                                            \
	  "1: at start-up, install a SIGSEGV handler that reports a free "   \
	  "whose pointer's 4 MiB-aligned base is unmapped (another "         \
	  "allocator's mapping, an object loaded later) as \"not allocated " \
	  "by tlmalloc\" instead of a crash; every other fault goes on to "  \
	  "the handler or default action found (src/fault.c).  0: no "       \
	  "handler, such a free is a SIGSEGV.  Read at start-up only.")      \
	X(guarded_rate, 0, 0, 1000000000,                                   \
	  "Guarded sampling (docs/secure.md): one in N of the allocations "  \
	  "of at most one OS page that leave malloc's inline path gets an "  \
	  "OS page of its own, right-aligned before a guard page, and stays "\
	  "inaccessible for a while after its free: an overflow, underflow "\
	  "or use after free of it faults and is reported on stderr with "   \
	  "the block, then abort.  0: off (no cost).  Turned on at start-up "\
	  "only; at run time it changes N, 0 stops sampling.")               \
	X(guarded_slots, 128, 1, 256,                                        \
	  "Guarded sampling: the blocks its pool holds at once, live or "    \
	  "waiting after their free (an OS page and a guard page each, "     \
	  "mapped at start-up when guarded_rate is on; at most what one "    \
	  "4 MiB segment holds: 125 with 16 KiB pages, 31 with 64 KiB).  "  \
	  "Read at start-up only.")                                          \
	X(secure_fill, TL_SECURE, 0, TL_SECURE,                              \
	  "The secure variant's fill of freed blocks: 1 (its default) fills "\
	  "every freed block up to 64 KiB with 0xdf past its first 16 "      \
	  "bytes, 0 does not (faster).  Only libtlmalloc-secure can fill: "  \
	  "the other builds (shown here) take 0 alone, and any other value " \
	  "warns.  The checks of the pointer freed have no option: part of " \
	  "the fast paths, they are in the default and secure builds and "   \
	  "not in libtlmalloc-fast.")                                       \
	X(secure_fill_check, TL_SECURE, 0, TL_SECURE,                        \
	  "The secure variant's check of the fill when a block is reused: "  \
	  "1 (its default) checks that a block filled at its free "          \
	  "(secure_fill) still holds its fill when malloc hands it out "     \
	  "again, and reports a write after free on stderr, then abort; 0 "  \
	  "does not (faster).  Blocks up to 64 KiB, as the fill.  Other "    \
	  "builds take 0 alone.")                                            \
	X(secure_canary, TL_SECURE, 0, TL_SECURE,                            \
	  "The secure variant's canaries: 1 (its default) puts 6 to 8 "      \
	  "bytes right after the requested size of every block up to 64 "    \
	  "KiB (8 bytes more asked of each malloc) and checks them at free, "\
	  "realloc and malloc_usable_size: an overflow of the block is "     \
	  "reported on stderr, then abort; 0: none.  Read at the first "     \
	  "malloc only.  Other builds take 0 alone.")                        \
	X(secure_canary_nul, TL_SECURE, 0, TL_SECURE,                        \
	  "The first byte of the secure variant's canaries: 1 (its default) "\
	  "makes it 0, so a string the program left unterminated ends right "\
	  "after the block's requested size (a read past it stops there), "  \
	  "and a 0 written one past the end (an off-by-one terminator) "     \
	  "changes nothing and is not reported; 0 makes it secret too, so "  \
	  "that write is reported at free.  Read at the first malloc only.  "\
	  "Other builds take 0 alone.")                                      \
	X(secure_quarantine, 64 * TL_SECURE, 0, 256 * TL_SECURE,              \
	  "The secure variant's quarantine: each thread holds its last N "   \
	  "freed blocks (up to 64 KiB each) before they can be reused, so "  \
	  "a write after free or a double free in that time is caught; 0: " \
	  "freed blocks are reused at once.  Lowered at run time, the "      \
	  "blocks past the new N wait for the thread's exit.  Other builds "\
	  "take 0 alone.")                                                   \
	X(secure_quarantine_check, TL_SECURE, 0, TL_SECURE,                  \
	  "The secure variant's check of a block leaving the quarantine: 1 " \
	  "(its default) checks that its fill is intact, so a write after "  \
	  "free in its time there is reported on stderr, then abort, even "  \
	  "if no malloc reuses the block; 0 checks its first 16 bytes only " \
	  "(faster).  Other builds take 0 alone.")                           \
	X(secure_recheck, TL_SECURE, 0, TL_SECURE,                           \
	  "The secure variant's second look at the block a thread freed "    \
	  "last, while the quarantine holds it: 1 (its default) checks it "  \
	  "again at the thread's next malloc or free (its link, its mark "   \
	  "and its fill up to 64 bytes in), so a write through a dangling "  \
	  "pointer right after the free is reported on stderr at once, "     \
	  "then abort, and not only when the block leaves the quarantine; "  \
	  "0 does not.  Nothing with secure_quarantine 0.  Other builds "    \
	  "take 0 alone.")                                                   \
	X(secure_underflow, TL_SECURE, 0, TL_SECURE,                         \
	  "The secure variant's check for underflows: 1 (its default) "     \
	  "checks, when a block up to 64 KiB is freed, the last bytes of "   \
	  "the block before it in its page (a live one's canary, a free "    \
	  "one's fill), so a write before the block's start is reported "    \
	  "on stderr, then abort; only while the process has one thread "    \
	  "(with more, that block may change under the check).  0 does "     \
	  "not.  Other builds take 0 alone.")                                \
	X(secure_huge_unmap, TL_SECURE, 0, TL_SECURE,                        \
	  "The secure variant's huge blocks (above 128 KiB): 1 (its "        \
	  "default) unmaps one at its free, so that a read or write after "  \
	  "free of it faults; 0 keeps it in the cache of freed huge blocks " \
	  "for reuse (faster).  Other builds take 0 alone.")                 \
	X(secure_zero, TL_SECURE, 0, TL_SECURE,                              \
	  "The secure variant's zeroed blocks: 1 (its default) zeroes every "\
	  "block up to 64 KiB when malloc hands it out (in the pass that "   \
	  "checks its fill), so memory the program did not write reads 0: "  \
	  "no data of the block's previous owner, no free-list link; 0: "    \
	  "such bytes hold the fill (0xdf) or what was there.  Other builds "\
	  "take 0 alone.")                                                   \
	X(secure_zero_size, TL_SECURE, 0, TL_SECURE,                         \
	  "The secure variant's zero-size blocks: 1 (its default) gives a "  \
	  "malloc of 0 bytes a distinct pointer into addresses that cannot " \
	  "be accessed, so a read or write through it faults at once; "     \
	  "free, realloc and malloc_usable_size of it work.  0: a block "    \
	  "for 0 bytes, as the other builds give.  Other builds take 0 "     \
	  "alone.")                                                          \
	X(secure_huge_quarantine, 256 * TL_SECURE, 0, 1024 * TL_SECURE,      \
	  "The secure variant's quarantine of huge blocks' addresses: a "    \
	  "huge block that free unmaps (secure_huge_unmap) leaves its "      \
	  "addresses reserved and inaccessible for the next N such frees "   \
	  "(at most 1 GiB of addresses in all), so that a later malloc "     \
	  "cannot get them and a read or write after free keeps faulting; "  \
	  "0: they are given back at once.  Lowered at run time, the ones "  \
	  "past the new N stay reserved.  Other builds take 0 alone.")       \
	X(profile, 0, 0, 1,                                                  \
	  "1: sampled heap profiling (docs/profiling.md): a profile that "   \
	  "pprof reads is written at exit to TLMALLOC_PROFILE_FILE (a "      \
	  "path, %p standing for the process id; default "                   \
	  "tlmalloc.%p.heap), with a leak report on stderr (a copy kept "    \
	  "as for show_stats when set at start-up).  Set at run "            \
	  "time, each thread starts or stops sampling at its next refill.  " \
	  "A bad value of any profile option, an unwritable file or a "      \
	  "signal in use prints one warning and turns profiling off.")       \
	X(profile_rate, 2097152, 1, 1073741824,                               \
	  "Mean bytes allocated between two samples (each sample weighted "  \
	  "by what it stands for, so the estimates are unbiased).  Read "    \
	  "when a thread starts sampling.")                                   \
	X(profile_signal, 0, 0, 64,                                          \
	  "A signal (e.g. 12, SIGUSR2) that writes the profile to "          \
	  "FILE.N (N = 1, 2, ...); 0: none.  Read at start-up only.")        \
	X(profile_growth, 0, 0, 1048576,                                     \
	  "MiB: write the profile to FILE.N each time the sampled live "     \
	  "heap grows this much past its last such dump; 0: never.")         \
	X(profile_seed, 0, 0, 2147483647,                                    \
	  "Seed of the sampling (0: a random one): the same seed and the "   \
	  "same single-threaded run sample the same blocks.")

enum tl_option_id {
#define TL_OPTION_ENUM(name, def, min, max, doc) TL_OPT_##name,
	TL_OPTIONS(TL_OPTION_ENUM)
#undef TL_OPTION_ENUM
	TL_OPT_COUNT
};

/* Option values, read on hot-ish paths with a relaxed load. */
extern tl_atomic_u64 tl_option_values[TL_OPT_COUNT];

static inline long tl_option(enum tl_option_id id)
{
	return (long)tl_u64_load_relaxed(&tl_option_values[id]);
}

/* Read TLMALLOC_* from the environment (idempotent, allocates nothing). */
void tl_options_init(void);

/* Fault injection: true if this OS mapping must fail (fault_map counts
 * down to it once, fault_oom to it and stays there). */
bool tl_option_fault_map_now(void);

#endif /* TLMALLOC_OPTIONS_H */

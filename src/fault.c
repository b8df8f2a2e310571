/*
 * fault.c - the SIGSEGV handler: free of a pointer whose would-be
 * descriptor is unmapped, and the faults of guarded sampling.
 *
 * free's fast path reads the owner word of the descriptor at p's 4 MiB-
 * aligned base before it knows whether p is tlmalloc's.  For a pointer
 * tlmalloc never returned, that base may be unmapped: another allocator's
 * (or the program's) mapping placed just above an empty 4 MiB boundary, as
 * the kernel places new mappings below the last, or an object loaded with
 * dlopen after start-up (segment.c shadows those loaded before).  The read
 * faults.  It is one instruction wherever free is inlined, whose address
 * is recorded in the section tl_free_probes, with p in rdi on x86-64 and
 * in x0 on arm64 (fastpath.h, tl_page_owner_probe).  Other machines have
 * no probes: there such a free is the SIGSEGV it would be without
 * tlmalloc's handler.
 *
 * At start-up (option catch_foreign, on by default) a SIGSEGV handler is
 * installed.  A fault at a probe is reported as any other foreign free,
 * "free(p): not allocated by tlmalloc", then abort.  Any other fault is
 * the program's: it goes to the handler installed before ours, if any, or
 * the action found at start-up is put back and the instruction faults
 * again (a SIGSEGV sent with kill or raise is sent again), so a crash stays
 * the crash it was (the same signal, its core).
 * A handler the program installs later replaces this one; such frees then
 * fault as they would without it.  GWP-ASan (LLVM's, tcmalloc's, Android's
 * allocators) installs and chains its handler the same way.
 *
 * The same handler reports the faults of guarded sampling (guarded.c):
 * with the option guarded_rate on it is installed on every machine, and a
 * fault inside the guarded pool is reported there as an overflow,
 * underflow or use after free, then abort; the others go on as above.
 */
#define _GNU_SOURCE	/* REG_RIP, REG_RDI */
#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"

static struct sigaction prev_action;

#if TL_FREE_PROBES
#include <ucontext.h>

/* The linker's bounds of the probes' section (offsets, see fastpath.h). */
extern const int32_t __start_tl_free_probes[]
	__attribute__((visibility("hidden")));
extern const int32_t __stop_tl_free_probes[]
	__attribute__((visibility("hidden")));

static bool is_probe(uintptr_t pc)
{
	for (const int32_t *e = __start_tl_free_probes;
	     e < __stop_tl_free_probes; e++)
		if ((uintptr_t)e + (uintptr_t)(intptr_t)*e == pc)
			return true;
	return false;
}

/* The faulting instruction and the probe's register (internal.h). */
#if defined(__x86_64__)
#define TL_FAULT_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define TL_FAULT_PTR(uc) ((void *)(uc)->uc_mcontext.gregs[REG_RDI])
#else
#define TL_FAULT_PC(uc) ((uintptr_t)(uc)->uc_mcontext.pc)
#define TL_FAULT_PTR(uc) ((void *)(uc)->uc_mcontext.regs[0])
#endif

/* A fault at a probe of free: report the foreign free. */
static void check_probe(void *context)
{
	ucontext_t *uc = context;
	if (tl_option(TL_OPT_catch_foreign) && is_probe(TL_FAULT_PC(uc)))
		tl_fatal("free", TL_FAULT_PTR(uc), "not allocated by tlmalloc");
}
#else
static void check_probe(void *context)
{
	(void)context;
}
#endif

static void on_segv(int sig, siginfo_t *info, void *context)
{
	check_probe(context);
	if (info->si_code > 0)		/* a fault, not a signal sent */
		tl_guarded_fault(info->si_addr);
	if ((prev_action.sa_flags & SA_SIGINFO) &&
	    prev_action.sa_sigaction != NULL) {
		prev_action.sa_sigaction(sig, info, context);
		return;
	}
	if (prev_action.sa_handler != SIG_DFL &&
	    prev_action.sa_handler != SIG_IGN) {
		prev_action.sa_handler(sig);
		return;
	}
	/* A fault comes again when the instruction runs again; a signal sent
	 * by kill or raise (si_code <= 0) must be sent again. */
	tl_os_restore_segv(&prev_action, info->si_code <= 0 &&
					 prev_action.sa_handler == SIG_DFL);
}

/* After tl_guarded_init: the handler is wanted for the probes or for the
 * guarded pool. */
TL_EVERY_PROCESS void tl_fault_init(void)
{
	if ((TL_FREE_PROBES && tl_option(TL_OPT_catch_foreign)) ||
	    tl_guarded_on())
		tl_os_catch_segv(on_segv, &prev_action);
}

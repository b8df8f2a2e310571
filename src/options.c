/*
 * options.c - the options of include/tlmalloc/options.h: read from the
 * environment at start-up without allocating (the environment is scanned
 * directly, numbers parsed here), and read or set at run time with
 * tl_option_get/tl_option_set.
 *
 * Values are relaxed atomics: any thread may set one at any time, and the
 * code that uses one reads it when it needs it.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"

extern char **environ;

struct tl_option_desc {
	const char *name;
	const char *env;
	long def;
	long min;
	long max;
};

static const struct tl_option_desc options[TL_OPT_COUNT] = {
#define TL_OPTION_DESC(name_, def_, min_, max_, doc_)                         \
	[TL_OPT_##name_] = { .name = #name_, .env = "TLMALLOC_" #name_,       \
			     .def = (def_), .min = (min_), .max = (max_) },
	TL_OPTIONS(TL_OPTION_DESC)
#undef TL_OPTION_DESC
};

tl_atomic_u64 tl_option_values[TL_OPT_COUNT] = {
#define TL_OPTION_DEFAULT(name_, def_, min_, max_, doc_)                      \
	[TL_OPT_##name_] = TL_ATOMIC_INIT((uint64_t)(def_)),
	TL_OPTIONS(TL_OPTION_DEFAULT)
#undef TL_OPTION_DEFAULT
};

/* Environment names are upper case: compare without case. */
static bool env_name_is(const char *entry, const char *name, const char **value)
{
	for (; *name != '\0'; name++, entry++) {
		char c = *entry;
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		char n = *name;
		if (n >= 'a' && n <= 'z')
			n = (char)(n - 'a' + 'A');
		if (c != n)
			return false;
	}
	if (*entry != '=')
		return false;
	*value = entry + 1;
	return true;
}

/* A whole decimal number, nothing else; false on overflow or junk. */
static bool parse_long(const char *s, long *out)
{
	bool neg = *s == '-';
	unsigned long v = 0;
	if (neg || *s == '+')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (ULONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (v > (unsigned long)LONG_MAX + (neg ? 1u : 0u))
		return false;
	*out = neg ? (long)(0 - v) : (long)v;
	return true;
}

/* entry: the whole NAME=value string of the environment; profile: a
 * profile option, whose bad value turns profiling off. */
static void warn_bad(const char *entry, bool profile)
{
	char buf[256];
	size_t n = 0;
	const char *parts[] = { "tlmalloc: ", entry,
				profile ? ": not a whole number in range; heap "
					  "profiling off\n"
					: ": not a whole number in range; keeping "
					  "the default\n" };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		n = tl_append(buf, n, sizeof(buf), parts[i]);
	tl_write_stderr(buf, n);
}

static void set_value(enum tl_option_id id, long v)
{
	atomic_store_explicit(&tl_option_values[id].v, (uint64_t)v,
			      memory_order_relaxed);
	if (id == TL_OPT_verbose)	/* the OS layer reads no option */
		tl_os_set_reporting(v != 0, tl_option_fault_map_now);
}

void tl_options_init(void)
{
	bool profile_bad = false;
	tl_os_set_reporting(tl_option(TL_OPT_verbose) != 0,
			    tl_option_fault_map_now);
	if (environ == NULL)
		return;
	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, "TLMALLOC_", 9) != 0)
			continue;
		for (int id = 0; id < TL_OPT_COUNT; id++) {
			const struct tl_option_desc *o = &options[id];
			const char *value;
			long v;
			if (!env_name_is(*e, o->env, &value))
				continue;
			bool profile = strncmp(o->name, "profile", 7) == 0;
			if (parse_long(value, &v) && v >= o->min && v <= o->max) {
				set_value((enum tl_option_id)id, v);
			} else {
				warn_bad(*e, profile);
				profile_bad |= profile;
			}
		}
	}
	if (profile_bad)
		set_value(TL_OPT_profile, 0);
}

static int find_option(const char *name)
{
	if (name == NULL)
		return -1;
	for (int id = 0; id < TL_OPT_COUNT; id++)
		if (strcmp(options[id].name, name) == 0)
			return id;
	return -1;
}

int tl_option_get(const char *name, long *value)
{
	int id = find_option(name);
	if (id < 0 || value == NULL)
		return EINVAL;
	*value = tl_option((enum tl_option_id)id);
	return 0;
}

int tl_option_set(const char *name, long value)
{
	int id = find_option(name);
	if (id < 0 || value < options[id].min || value > options[id].max)
		return EINVAL;
	set_value((enum tl_option_id)id, value);
	return 0;
}

/* Count option id down by one, but not below stop; whether it was at 1. */
static bool count_down(enum tl_option_id id, uint64_t stop)
{
	uint64_t left = tl_u64_load_relaxed(&tl_option_values[id]);
	while (left > stop) {
		if (atomic_compare_exchange_weak_explicit(
			    &tl_option_values[id].v, &left, left - 1,
			    memory_order_relaxed, memory_order_relaxed))
			return left == 1;
	}
	return left == 1;
}

bool tl_option_fault_map_now(void)
{
	bool once = count_down(TL_OPT_fault_map, 0);
	return count_down(TL_OPT_fault_oom, 1) || once;
}

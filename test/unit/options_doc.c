/*
 * options_doc.c - prints docs/options.md from the one declaration of the
 * options (TL_OPTIONS in include/tlmalloc/options.h).  The test
 * options_doc_stale runs it and compares with the committed page;
 * `build/test/unit/options_doc > docs/options.md` regenerates it.
 */
#include <stdio.h>

#include "tlmalloc/options.h"

int main(void)
{
	printf("# Options\n\n"
	       "Every option is read at start-up from the environment variable\n"
	       "`TLMALLOC_<NAME>` (the name in upper case), and can be read and\n"
	       "set while the program runs with `tl_option_get(\"name\", &value)`\n"
	       "and `tl_option_set(\"name\", value)` (`include/tlmalloc.h`).\n"
	       "Values are whole numbers. A value that is not one, or is out of\n"
	       "range, prints one warning line on stderr and keeps the default;\n"
	       "`tl_option_set` returns `EINVAL` for it.\n\n"
	       "This page is generated from `include/tlmalloc/options.h` by\n"
	       "`test/unit/options_doc.c`; the test suite fails when it is\n"
	       "stale.\n\n"
	       "| variable | name | default | range | meaning |\n"
	       "|---|---|---|---|---|\n");
#define TL_OPTION_ROW(name, def, min, max, doc)                               \
	{                                                                     \
		char upper[64];                                               \
		const char *s = #name;                                        \
		size_t i = 0;                                                 \
		for (; s[i] != '\0' && i < sizeof(upper) - 1; i++)            \
			upper[i] = (char)(s[i] >= 'a' && s[i] <= 'z'          \
						  ? s[i] - 'a' + 'A' : s[i]); \
		upper[i] = '\0';                                              \
		printf("| `TLMALLOC_%s` | `%s` | %ld | %ld..%ld | %s |\n",     \
		       upper, #name, (long)(def), (long)(min), (long)(max),   \
		       doc);                                                  \
	}
	TL_OPTIONS(TL_OPTION_ROW)
#undef TL_OPTION_ROW
	return 0;
}

"""tlmalloc's experiment harness: runs the workloads in bench/ against every
allocator found on the machine and writes a report with tables and plots.

Modules: workloads (what runs), allocators (with what), runner (one
measured run), schedule (order and progress), fastpath (the callgrind
pass), programs (--program), parse (workload and strace output), records
(the results set), stats (medians), classic (the classic observations),
report (Markdown), plots (matplotlib), results (the results folder),
machine (the machine's description), cli (the command line).

Typed throughout; mypy checks it, strict (mypy.ini, ctest harness.types).
"""

"""tlmalloc's experiment harness: runs the workloads in bench/ against every
allocator found on the machine and writes a report with tables and plots.

Modules: workloads (what runs), allocators (with what), runner (one
measured run), schedule (order and progress), parse (workload and strace
output), stats (medians), classic (the classic observations), report
(Markdown), plots (matplotlib), results (the results folder), machine (the
machine's description), cli (the command line).
"""

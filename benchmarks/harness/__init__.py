"""The benchmark driver's parts: workloads (what is measured and the targets), venvs (installing the
compiling peers), runners (one process per measurement), analysis (ratios and targets), report (the
console table and docs/BENCHMARKS.md) and chart (docs/benchmarks.svg). Standard library only."""

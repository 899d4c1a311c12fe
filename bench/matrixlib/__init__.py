"""bench/matrix's pieces: plan (what runs, in which order), runner
(building, running, the settle step), figures (statistics, ratios,
targets) and report (BENCHMARKS.md and the console table)."""

"""The benchmarks' Python side: bench.harness (the peers' runners and the report scripts).
The C++ drivers beside it are built by CMake (calico_bench)."""

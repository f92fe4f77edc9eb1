"""The Python harness of the benchmarks, importable from the repository root.

  bench.harness.peers    runs the peer engines and Calico's Python API on the C++ drivers'
                         datasets and writes the same JSON lines (vector_peers, python_peers,
                         python_concurrency)
  bench.harness.report   turns the drivers' JSON lines into tables, Markdown and figures

Each module runs as `python3 -m bench.harness.<package>.<module>` from the repository root,
or by its path; the experiment scripts that call them are in bench/experiments/.
"""

"""bench/harness/report/vector_figures.py: QPS at equal recall (interpolated per round) and the paired
ratios of the equal-recall table; postgres_report.py: the pgbench table's A/A column and counts.
Not part of the calico package; tested here because this
is the Python suite CI runs."""
import importlib.util
import math
import pathlib

import pytest

_path = pathlib.Path(__file__).resolve().parents[2] / "bench" / "harness" / "report" / "vector_figures.py"
_spec = importlib.util.spec_from_file_location("vector_figures", _path)
vf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vf)


def test_qps_at_recall_interpolates_log_linearly_and_refuses_to_extrapolate():
    curve = [(0.80, 1000.0), (0.90, 500.0), (0.99, 100.0)]
    assert vf.qps_at_recall(curve, 0.90) == pytest.approx(500.0)
    w = (0.95 - 0.90) / (0.99 - 0.90)
    assert vf.qps_at_recall(curve, 0.95) == pytest.approx(math.exp(math.log(500) + w * (math.log(100) - math.log(500))))
    assert vf.qps_at_recall(curve, 0.995) is None  # above the sweep
    assert vf.qps_at_recall(curve, 0.70) is None  # below the sweep's first point
    assert vf.qps_at_recall([(0.95, 7.0)], 0.95) == 7.0


def point(system, translation, threads, param, recall, qps_lines):
    return dict(system=system, index="hnsw", translation=translation, fraction=0.0, threads=threads, param=param,
                recall=recall, qps=sorted(qps_lines)[len(qps_lines) // 2], qps_lines=qps_lines)


def test_equal_recall_table_pairs_rounds_and_marks_unreached_targets():
    pts = [
        point("calico", "array", 1, 16, 0.85, [2000.0, 1000.0]),
        point("calico", "array", 1, 64, 0.99, [400.0, 200.0]),
        point("hnswlib", "", 1, 16, 0.85, [1000.0, 1000.0]),
        point("hnswlib", "", 1, 64, 0.99, [200.0, 200.0]),
        point("faiss_hnsw", "", 1, 16, 0.80, [900.0, 900.0]),
        point("faiss_hnsw", "", 1, 64, 0.92, [300.0, 300.0]),
    ]
    lines = []
    vf.equal_recall_table(pts, "hnsw", lines, targets=(0.99,))
    header, _sep, row = lines[0], lines[1], lines[2]
    assert header.split("|")[3].strip() == "calico (array)"
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[:2] == ["1", "0.99"]
    assert cells[2] == "300"  # median of 400 and 200
    # Round 1: 400 / 200 = 2x, round 2: 200 / 200 = 1x: median 1.5, range 1..2 (paired, not a
    # ratio of medians, which would also be 1.5 here but 300/200 for the cell).
    assert cells[3] == "200 (1.50x; 1.00..2.00)"
    assert cells[4] == "not reached"


def test_equal_recall_table_says_when_a_curve_starts_above_the_target():
    pts = [point("calico", "array", 1, 1, 0.92, [100.0]), point("calico", "array", 1, 2, 0.98, [50.0]),
           point("hnswlib", "", 1, 1, 0.80, [90.0]), point("hnswlib", "", 1, 2, 0.95, [40.0])]
    lines = []
    vf.equal_recall_table(pts, "hnsw", lines, targets=(0.90, 0.99))
    rows = [[c.strip() for c in l.split("|")[1:-1]] for l in lines[2:4]]
    assert rows[0][2] == "above at every point" and rows[0][3].startswith("5")  # 90 -> 40 at 0.90: ~52
    assert rows[1][2] == "not reached" and rows[1][3] == "not reached"


def test_fio_at_depth_interpolates_in_log_depth_and_clamps_to_the_measured_range():
    disk = {1: 20000.0, 4: 50000.0, 16: 80000.0}
    assert vf.fio_at_depth(disk, 4) == pytest.approx(50000.0)
    assert vf.fio_at_depth(disk, 2) == pytest.approx(35000.0)  # halfway between 1 and 4 in log(depth)
    assert vf.fio_at_depth(disk, 8) == pytest.approx(65000.0)
    assert vf.fio_at_depth(disk, 0.3) == 20000.0  # below the first depth: the first point
    assert vf.fio_at_depth(disk, 40) == 80000.0  # above the last: the last point
    assert vf.fio_at_depth({}, 4) is None and vf.fio_at_depth(disk, None) is None


def test_ltm_table_gives_device_depth_and_the_fraction_of_fio():
    p = dict(system="calico", index="hnsw", translation="array", fraction=0.2, threads=2, param=50, recall=0.96,
             qps=170.0, reads=344.0, iops=58000.0, disk_iops=58500.0, disk_depth=8.0, cpu_cores=0.4)
    lines = []
    assert vf.ltm_table([p], {1: 20000.0, 4: 50000.0, 16: 80000.0}, lines)
    row = next(line for line in lines if line.startswith("| 20% |"))
    assert row.endswith("| 58500 | 8.0 | 65000 | 90% | 0.40 |")


_pg_path = pathlib.Path(__file__).resolve().parents[2] / "bench" / "harness" / "report" / "postgres_report.py"
_pg_spec = importlib.util.spec_from_file_location("postgres_report", _pg_path)
pgr = importlib.util.module_from_spec(_pg_spec)
_pg_spec.loader.exec_module(pgr)


def test_postgres_report_prints_the_pgbench_a_a_column_and_counts_per_transaction(capsys, tmp_path):
    summary = dict(bench="pg_oltp", kind="summary", mode="ltm", workload="tpcb", clients=1, scale=50, db_mb=758,
                   rounds=3, shared_buffers="94MB", baseline="vanilla-worker", aa_ratio=0.907,
                   tps={"vanilla-worker": 2000.0, "vanilla-aa": 1900.0, "calico": 1000.0},
                   ratio_vs_baseline={"calico": 0.5})
    counts = dict(bench="pg_oltp", kind="counts", mode="ltm", workload="tpcb", clients=1, config="calico", tps=1000.0,
                  server_cpu_us_per_query=455.0, buffer_hits_per_query=17.7, blocks_read_per_query=1.74,
                  io_writes_per_query=0.231, evictions_per_query=0.316, wal_writes_per_query=0.017,
                  wal_fsyncs_per_query=0.009, syscalls_per_query=63.2)
    pgr.oltp([summary, counts], str(tmp_path))
    out = capsys.readouterr().out
    assert "| calico / baseline | A/A | page cache at start (least) |" in out
    assert "| ltm | 94MB | tpcb | 1 | 2000.0 | 1000.0 | vanilla-worker | **0.5x** | 0.907 | not recorded |" in out
    assert "| ltm | tpcb | 1 | calico | 1000.0 | 455.0 | 17.7 | 1.74 | 0.231 | 0.316 | 0.017 | 0.009 | 63.2 |" in out


def test_postgres_report_prints_the_least_page_cache_a_pgbench_run_started_with(capsys, tmp_path):
    # larger than memory, each server reads its own copy of the data: a run that began with a
    # cold page cache measures the disk, not the pool, and the table must show it
    summary = dict(bench="pg_oltp", kind="summary", mode="ltm", workload="tpcb", clients=1, scale=50, db_mb=788,
                   rounds=2, shared_buffers="98MB", baseline="vanilla-worker",
                   tps={"vanilla-worker": 2500.0, "calico": 2450.0}, ratio_vs_baseline={"calico": 0.98})
    inmem = dict(summary, mode="inmem", shared_buffers="2048MB")
    run = dict(bench="pg_oltp", kind="run", mode="ltm", workload="tpcb", clients=1, seconds=5.0, tps=2500.0,
               loadavg_start="1.0 1.0 1.0", loadavg_end="1.0 1.0 1.0", relations_mb=800.0)
    runs = [dict(run, config="vanilla-worker", page_cache_mb=800.0), dict(run, config="calico", page_cache_mb=200.0),
            dict(run, config="calico", page_cache_mb=796.0)]
    pgr.oltp([summary, inmem] + runs, str(tmp_path))
    out = capsys.readouterr().out
    assert "| ltm | 98MB | tpcb | 1 | 2500.0 | 2450.0 | vanilla-worker | **0.98x** | 25% |" in out
    assert "| inmem | 2048MB | tpcb | 1 | 2500.0 | 2450.0 | vanilla-worker | **0.98x** |  |" in out


def test_postgres_report_says_not_run_for_an_ablation_step_that_did_not_run(capsys, tmp_path):
    summary = dict(bench="pg_vector", kind="summary", dataset="embedding", n=1000, dim=384, metric="ip", M=16,
                   ef_construction=64, index_mb=2, table_mb=1, mode="inmem", shared_buffers="4GB", rounds=3,
                   ef=40, clients=1, baseline="vanilla-sync", qps={"vanilla-sync": 100.0, "calico": 170.0},
                   ratio_vs_baseline={"calico": 1.7})
    pgr.vector([summary], str(tmp_path))
    out = capsys.readouterr().out
    assert "| vanilla-sync | **1.7x** | not run, not run |" in out
    assert "x, x" not in out

"""bench/harness/peers/churn.py and filtered.py: the exact top-k they measure recall against,
the allow-lists, the recall count, and a small churn run of Calico end to end. Not part of
the calico package; tested here because this is the Python suite CI runs."""
import importlib.util
import json
import pathlib

import numpy as np
import pytest

_peers = pathlib.Path(__file__).resolve().parents[2] / "bench" / "harness" / "peers"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _peers / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


churn = _load("churn")
filtered = _load("filtered")


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_exact_top_k_matches_a_full_sort_over_the_live_rows(metric):
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(400, 8)).astype(np.float32)
    queries = rng.normal(size=(7, 8)).astype(np.float32)
    live = np.sort(rng.choice(400, size=150, replace=False))
    got = churn.exact_top_k(rows, live, queries, metric)
    for q in range(len(queries)):
        base = rows[live].astype(np.float64)
        if metric == "l2":
            d = ((base - queries[q].astype(np.float64)) ** 2).sum(1)
        else:
            d = -(base @ queries[q].astype(np.float64))
        assert list(got[q]) == list(live[np.argsort(d, kind="stable")[:10]])
        assert set(got[q]) <= set(live)  # row numbers of live rows, never others


def test_allow_lists_have_the_selectivity_and_their_labels_name_the_same_rows():
    rng = np.random.default_rng(4)
    clusters = 50
    of_rows = rng.integers(0, clusters, size=20000)
    buckets = np.floor(rng.random(20000) * filtered.BUCKETS).astype(np.int64)
    order = rng.permutation(clusters)
    for sel in (0.01, 0.1, 0.5):
        lists = filtered.allow_lists(buckets, of_rows, order, sel)
        mask, labels = lists["uncorrelated"]
        assert abs(mask.mean() - sel) < 0.2 * sel + 0.002
        assert len(labels) == round(sel * filtered.BUCKETS)
        assert np.array_equal(mask, np.isin(buckets, labels))  # the label filter allows these rows
        corr, chosen = lists["correlated"]
        assert sel <= corr.mean() < sel + 0.04  # whole clusters, until the fraction is reached
        assert np.array_equal(corr, np.isin(of_rows, chosen))
        assert set(chosen) <= set(order[:len(chosen)])  # the first clusters of the order


def test_recall_counts_against_min_k_allowed():
    gt = np.array([[1, 2, 3, -2, -2, -2, -2, -2, -2, -2]])  # 3 rows allowed
    found = np.array([[3, 1, 9, -1, -1, -1, -1, -1, -1, -1]])
    assert filtered.recall(found, gt, 3) == pytest.approx(2 / 3)
    assert filtered.recall(found, gt, 0) == 1.0


def test_a_small_churn_run_keeps_calico_recall_and_writes_every_round(tmp_path):
    out = tmp_path / "churn.jsonl"
    churn.main(["--systems", "calico", "--n", "600", "--dim", "8", "--clusters", "20", "--queries", "50",
                "--rounds", "2", "--fraction", "0.5", "--ef", "64", "--seconds", "0.01", "--repeat", "1",
                "--build-threads", "2", "--work-dir", str(tmp_path / "work"), "--json", str(out)])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    rounds = [r for r in lines if r["phase"] == "churn"]
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert [r["replaced"] for r in rounds] == [0.0, 0.5, 1.0]
    assert all(r["recall"] >= 0.95 for r in rounds), rounds
    fresh = [r for r in lines if r["phase"] == "fresh"]
    assert len(fresh) == 1 and fresh[0]["recall"] >= 0.95
    assert all(r["qps"] > 0 and r["machine"]["cores"] >= 1 for r in rounds)


def test_a_small_filtered_run_returns_only_allowed_rows_and_as_many_as_exist(tmp_path):
    out = tmp_path / "filtered.jsonl"
    filtered.main(["--systems", "calico,calico-labels", "--n", "3000", "--dim", "8", "--clusters", "30",
                   "--queries", "40", "--selectivity", "0.002,0.1,0.5", "--ef", "16,64", "--seconds", "0.01",
                   "--repeat", "1", "--build-threads", "2", "--json", str(out)])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    points = [r for r in lines if r["bench"] == "filtered"]
    assert len(points) == 2 * 3 * 2 * 2  # systems x selectivities x kinds x ef
    assert {r["system"] for r in lines if r["bench"] == "filtered_build"} == {"calico", "calico-labels"}
    for r in points:
        assert r["not_allowed_returned"] == 0, r
        assert r["rows"] == min(10, r["allowed"]), r
        assert r["recall"] >= (1.0 if r["allowed"] <= 10 else 0.8), r
    # Both ways of saying the same allow-list: exact below the threshold, so equal recall.
    for sel in (0.002, 0.1):
        by = {(r["system"], r["allow_list"], r["ef"]): r["recall"] for r in points if r["selectivity"] == sel}
        for kind in ("uncorrelated", "correlated"):
            for ef in (16, 64):
                assert by[("calico", kind, ef)] == by[("calico-labels", kind, ef)] == 1.0

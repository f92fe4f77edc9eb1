#!/usr/bin/env python3
"""Tests of scripts/check_docs_data.py (named files and relative links) on throw-away git repositories.

Usage: scripts/check_docs_data_test.py   (exit 0 when every case behaves; run by scripts/test.sh)
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_docs_data.py")


def git(root, *args):
    subprocess.run(["git", "-C", root, *args], check=True, capture_output=True)


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def check(root):
    r = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


PAGE = """# Results

The raw lines are in `docs/a/data.jsonl`.

    ./build/calico_bench demo --json demo.jsonl --plot OUT.png     # data: docs/a/more.jsonl
    bench/harness/report/table.py OUTDIR/x.jsonl docs/a/data.jsonl

![figure](a/fig.png) and the sweep in OUT/*.jsonl.
Each run appends `.jsonl` lines to the file of `--json written.jsonl`.
"""


class CheckDocsData(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        git(self.root, "init", "-q")
        write(self.root, "README.md", "# Readme\n\nSee docs/a.md.\n")
        write(self.root, "docs/a.md", PAGE)
        write(self.root, ".gitignore", "*.jsonl\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_missing_files_are_listed_with_page_and_line(self):
        rc, out = check(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/a.md:3 -> docs/a/data.jsonl", out)
        self.assertIn("docs/a.md:5 -> docs/a/more.jsonl", out)  # a citation in a code comment
        self.assertIn("docs/a.md:6 -> docs/a/data.jsonl", out)  # a docs/ argument of a command
        self.assertIn("docs/a.md:8 -> a/fig.png", out)  # an image, relative to the page
        # What a command writes, and placeholders, are not citations.
        self.assertNotIn("demo.jsonl", out)
        self.assertNotIn("OUT", out)
        self.assertNotIn("written.jsonl", out)  # an output option's argument, in prose too
        self.assertNotIn("-> .jsonl", out)  # a bare extension

    def test_an_ignored_untracked_file_does_not_count(self):
        for p in ("docs/a/data.jsonl", "docs/a/more.jsonl", "docs/a/fig.png"):
            write(self.root, p, "{}\n")
        rc, out = check(self.root)  # on disk, but *.jsonl is ignored and nothing is tracked
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/a.md:3 -> docs/a/data.jsonl", out)
        git(self.root, "add", "docs/a/fig.png")
        rc, out = check(self.root)
        self.assertEqual(rc, 1, out)
        self.assertNotIn("fig.png", out)
        self.assertIn("docs/a/more.jsonl", out)

    def test_passes_when_every_cited_file_is_tracked(self):
        for p in ("docs/a/data.jsonl", "docs/a/more.jsonl", "docs/a/fig.png"):
            write(self.root, p, "{}\n")
            git(self.root, "add", "-f", p)
        git(self.root, "add", "docs/a.md")  # README.md names it
        rc, out = check(self.root)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok", out)

    def test_readme_at_the_root_is_checked(self):
        write(self.root, "README.md", "# Readme\n\nFigures from `docs/missing.csv`.\n")
        rc, out = check(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("README.md:3 -> docs/missing.csv", out)

    def test_a_named_page_must_be_tracked(self):
        rc, out = check(self.root)  # README.md names docs/a.md, which is not added
        self.assertEqual(rc, 1, out)
        self.assertIn("README.md:3 -> docs/a.md", out)
        write(self.root, "docs/b.md", "# B\n\nMoved: `docs/old/place.md`; run `bench/x.py --md docs/results/$REPORT.md`.\n")
        rc, out = check(self.root)
        self.assertIn("docs/b.md:3 -> docs/old/place.md", out)
        self.assertNotIn("REPORT", out)  # a placeholder


class CheckDocsLinks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        git(self.root, "init", "-q")
        for p in ("docs/design/x.md", "docs/results/y.md", "docs/results/y/fig.png", "src/pool/README.md"):
            write(self.root, p, "# page\n")
            git(self.root, "add", p)

    def tearDown(self):
        self.tmp.cleanup()

    def page(self, text):
        write(self.root, "docs/design/p.md", text)
        git(self.root, "add", "docs/design/p.md")
        return check(self.root)

    def test_relative_links_resolve_against_the_page(self):
        rc, out = self.page(
            "# P\n\nSee [x](x.md#a-section), [y](../results/y.md), ![f](../results/y/fig.png),\n"
            "[the folder](../results/y/), [the pool](../../src/pool/README.md), [web](https://example.org/a.md),\n"
            "[here](#top) and [Key].\n\n[Key]: ../results/y.md#part\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("relative links, all resolve", out)

    def test_broken_links_are_listed_with_page_and_line(self):
        rc, out = self.page(
            "# P\n\n[gone](../y.md) and ![gone](y/fig.png)\n\n[Key]: ../references.md#calico\n"
            "`[not a link](nowhere.md)`\n\n    [code](nowhere.md)\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/design/p.md:3 -> ../y.md", out)
        self.assertIn("docs/design/p.md:3 -> y/fig.png", out)
        self.assertIn("docs/design/p.md:5 -> ../references.md#calico", out)
        link_part = out.split("relative link(s)", 1)[1]
        self.assertNotIn("nowhere.md", link_part)  # code spans and code blocks are not links
        self.assertIn("docs/design/p.md:6 -> nowhere.md", out)  # but a code span names a file


class CheckCodePointers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        git(self.root, "init", "-q")
        write(self.root, "src/pool/access.h", "// access\n\ninline void pin_shared() {}\nvoid fault();\n")
        git(self.root, "add", "src/pool/access.h")

    def tearDown(self):
        self.tmp.cleanup()

    def readme(self, text):
        write(self.root, "src/pool/README.md", text)
        git(self.root, "add", "src/pool/README.md")
        return check(self.root)

    def test_pointers_that_name_their_line_pass(self):
        rc, out = self.readme("1. `PoolCore::pin_shared` (`access.h:3`), then `fault` (`src/pool/access.h:4`).\n")
        self.assertEqual(rc, 0, out)

    def test_a_pointer_whose_line_moved_is_listed(self):
        rc, out = self.readme("Steps:\n1. `pin_shared` (`access.h:4`) and `evict` (`eviction.h:9`).\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("src/pool/README.md:2 -> access.h:4 does not name pin_shared", out)
        self.assertIn("src/pool/README.md:2 -> eviction.h: no such file", out)


if __name__ == "__main__":
    unittest.main()

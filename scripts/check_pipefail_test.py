#!/usr/bin/env python3
"""Tests of scripts/check_pipefail.py on small scripts.

Usage: scripts/check_pipefail_test.py   (exit 0 when every case behaves; run by scripts/test.sh)
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_pipefail  # noqa: E402

STRICT = "#!/usr/bin/env bash\nset -euo pipefail\n"


def found(body, header=STRICT):
    return [p.split(": ", 1)[0] for p in check_pipefail.check_file("t.sh", header + body)]


class EarlyReaders(unittest.TestCase):
    def test_head_after_a_pipe_is_reported_with_its_line(self):
        self.assertEqual(found("x=1\nglibc=$(ldd --version | head -1)\n"), ["t.sh:4"])

    def test_quiet_max_count_and_list_greps_are_reported(self):
        for reader in ("grep -q x", "grep -Eq 'a|b'", "grep -m1 x", "grep -m 2 x", "grep --quiet x",
                       "grep -l x", "grep --max-count=1 x"):
            with self.subTest(reader=reader):
                self.assertEqual(len(found(f"dpkg-query -W foo | {reader} || echo no\n")), 1)

    def test_readers_that_consume_everything_pass(self):
        for reader in ("sed -n 1p", "grep -c x", "grep -v x", "awk 'NR==1'", "tail -1", "grep -E 'q|m'",
                       "cut -d' ' -f2"):
            with self.subTest(reader=reader):
                self.assertEqual(found(f"ls | {reader}\n"), [])

    def test_or_lists_quotes_and_comments_are_not_pipes(self):
        self.assertEqual(found("make || head -3 log\n"), [])
        self.assertEqual(found("echo 'a | head -1'\n"), [])
        self.assertEqual(found("ls  # then | head -1\n"), [])
        self.assertEqual(found("head -3 file\n"), [])

    def test_continuation_lines_are_one_pipeline(self):
        self.assertEqual(found("x=$(cat a b \\\n  | grep -v y \\\n  | head -1)\n"), ["t.sh:3"])

    def test_scripts_without_pipefail_are_not_checked(self):
        self.assertEqual(found("ls | head -1\n", header="#!/bin/bash\nset -e\n"), [])


if __name__ == "__main__":
    unittest.main()

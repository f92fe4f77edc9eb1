#!/usr/bin/env python3
"""Finds pipelines that fail at random under `set -o pipefail`.

A reader that stops early (`head`, `grep -q`, `grep -m N`, `grep -l`) closes the pipe while the
writer may still be writing; the writer then dies of SIGPIPE, and pipefail makes the whole
pipeline exit 141. Whether it happens depends on scheduling: `ldd --version | head -1` (ldd is
a shell script that prints line by line) failed 20 times in 200 on the CI machine, and `set -e`
turned that into a failed run. Readers that consume all their input (`sed -n 1p`, `awk`,
`grep` without those options, `[[ $(...) == ... ]]`) never cause it.

Checks every tracked shell script (*.sh, or a sh/bash #! line) that enables pipefail; a stage after the first `|` of a pipeline
whose command is such an early reader is reported with its file and line.

Usage: scripts/check_pipefail.py [REPOSITORY]   (default: this one; exit 1 when one is found)
"""
import os
import re
import shlex
import subprocess
import sys

# grep options that stop reading before the end of the input.
GREP_EARLY = {"--quiet", "--silent", "--max-count", "--files-with-matches", "--files-without-match"}
GREP_EARLY_SHORT = set("qmlL")


def logical_lines(text):
    """(first line number, text) for each logical line: continuations joined, comments dropped."""
    start, parts = None, []
    for number, line in enumerate(text.splitlines(), 1):
        code = strip_comment(line)
        if start is None:
            start = number
        if code.endswith("\\"):
            parts.append(code[:-1])
            continue
        parts.append(code)
        yield start, " ".join(parts)
        start, parts = None, []
    if parts:
        yield start, " ".join(parts)


def strip_comment(line):
    """The line without a trailing `# ...` comment (a # outside quotes that starts a word)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t;(|&"):
            return line[:i].rstrip()
    return line.rstrip()


def stages(line):
    """The text after each pipe (`|` or `|&`, not `||`) of the line, outside quotes."""
    out, quote, i = [], None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "|":
            nxt = line[i + 1:i + 2]
            if nxt == "|":
                i += 2
                continue
            out.append(line[i + 1 + (nxt == "&"):])
        i += 1
    return out


def early_reader(stage):
    """The name of the early-stopping reader that starts this pipeline stage, or None."""
    stage = re.split(r"[|;&)]", stage, maxsplit=1)[0]
    try:
        words = shlex.split(stage)
    except ValueError:
        words = stage.split()
    if not words:
        return None
    if words[0] == "head":
        return "head"
    if words[0] != "grep":
        return None
    for w in words[1:]:
        if w == "--" or not w.startswith("-"):
            break
        if w.startswith("--"):
            if w.split("=")[0] in GREP_EARLY:
                return "grep " + w
        elif GREP_EARLY_SHORT & set(w[1:].split("=")[0].rstrip("0123456789")):
            return "grep " + w
    return None


def check_file(path, text):
    if not re.search(r"^\s*set\s.*\bpipefail\b", text, re.M):
        return []
    found = []
    for number, line in logical_lines(text):
        for stage in stages(line):
            reader = early_reader(stage)
            if reader:
                found.append(f"{path}:{number}: `| {reader}` under pipefail: the writer can die of "
                             f"SIGPIPE and fail the pipeline (read all input: sed -n 1p, awk, [[ ]])")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    tracked = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split()
    problems, files = [], 0
    for f in tracked:
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            head = fh.read(64)
        if not (f.endswith(".sh") or re.match(rb"#!\S*(/|env )(ba)?sh\b", head)):
            continue
        files += 1
        with open(path, encoding="utf-8") as fh:
            problems += check_file(f, fh.read())
    for p in problems:
        print(p)
    print(f"check_pipefail: {files} shell scripts, {len(problems)} early readers under pipefail")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

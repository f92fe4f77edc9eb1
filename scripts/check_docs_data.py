#!/usr/bin/env python3
"""Every file a documentation page names must be committed, every relative link must resolve, and
every code pointer must still point at what it names.

Usage: scripts/check_docs_data.py [ROOT]     (ROOT: a git work tree, default: this repository)

Pages: README.md and docs/**/*.md (and, for check 3, the READMEs under src/). Three checks:

1. Named files. A named file is any path ending in .jsonl, .json, .csv, .tsv, .png, .svg
   (data and figures), .txt (printed reports) or .md (other pages). A mention is checked
   when the page cites it:
  - in prose (inline `code` spans included) and in Markdown links and images;
  - in a code block, after a '#' comment, or as an argument that names a path under docs/
    (e.g. `bench/harness/report/micro_figures.py docs/results/micro/large.jsonl`).
Not checked, because they name what a command will write, not committed data:
  - other arguments of a command in a code block (`calico_bench ... ycsb.jsonl`), and the
    argument of an output option anywhere (`--json out.jsonl`, `--plot x.png`, `> x.csv`);
  - placeholders anywhere: a path with a glob or template character (* ? { } < > $) or with
    a component in capitals (OUT.jsonl, OUTDIR/postgres.jsonl, DIR/...); a bare extension
    (".jsonl").
A mention resolves against the page's directory, then the repository root; it exists when
`git ls-files` lists it (tracked: a .gitignore rule cannot hide a missing file, and an
untracked file on the checker's disk does not count).

2. Links. Every Markdown link, image and reference definition outside code whose target is
   not a URL (scheme:...) or an anchor alone (#...) must name, relative to the page's
   directory as Markdown resolves it, a tracked file or a directory holding one (the #anchor
   is not checked).

3. Code pointers. A pointer written `name` (`path:line`) (path ending in .h, .cc, .py or .sh,
   relative to the page's directory or the repository root) must name a file whose line
   `line` contains name's last component (`PoolCore::fault` -> fault): step-by-step walks
   through the code say where each step is, and this keeps them true as the code moves.

Exit status 0 when all three hold; 1 with one line per missing file or broken link,
"page:line -> path", when some do not; 2 on a usage error.
"""
import os
import re
import subprocess
import sys

EXTENSIONS = ("jsonl", "json", "csv", "tsv", "png", "svg", "txt", "md")
# A path-like token ending in one of the extensions (not followed by more path characters).
TOKEN = re.compile(r"[A-Za-z0-9_.*?{}<>$/+-]*\.(?:%s)(?![A-Za-z0-9_/-])" % "|".join(EXTENSIONS))
PLACEHOLDER_CHARS = set("*?{}<>$")
# The argument of an output option names what a command writes, wherever it appears.
OUTPUT_OPTION = re.compile(r"(?:--json|--out|--plot|--output|-o|>>?)[ =]$")
PLACEHOLDER_COMPONENT = re.compile(r"^[A-Z][A-Z0-9_]*$")
# A path right after "scheme:" is part of a URL, not a file of the repository.
URL_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:$")


def is_placeholder(token):
    if token.startswith(".") and "/" not in token and token.count(".") == 1:
        return True  # a bare extension (".jsonl"), not a file
    if any(c in PLACEHOLDER_CHARS for c in token):
        return True
    for part in token.split("/"):
        stem = part.split(".", 1)[0]
        if stem and PLACEHOLDER_COMPONENT.match(stem):
            return True
    return False


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    return {p for p in out.decode("utf-8", "replace").split("\0") if p}


def pages(root, tracked):
    found = set()
    if "README.md" in tracked or os.path.isfile(os.path.join(root, "README.md")):
        found.add("README.md")
    docs = os.path.join(root, "docs")
    for dirpath, _, files in os.walk(docs):
        for f in files:
            if f.endswith(".md"):
                found.add(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(found)


def mentions(text):
    """Yields (line number, token) for every cited data file of one page."""
    in_fence = False
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
            continue
        in_code = in_fence or line.startswith("    ") or line.startswith("\t")
        if in_code:
            command, _, comment = line.partition("#")
            for m in TOKEN.finditer(comment):
                if not OUTPUT_OPTION.search(comment[: m.start()]):
                    yield lineno, m.group(0)
            for m in TOKEN.finditer(command):
                tok = m.group(0)
                if tok.startswith("docs/") and not OUTPUT_OPTION.search(command[: m.start()]):
                    yield lineno, tok
        else:
            for m in TOKEN.finditer(line):
                before = line[: m.start()]
                if not OUTPUT_OPTION.search(before) and not URL_BEFORE.search(before):
                    yield lineno, m.group(0)


# [text](target "title") and ![alt](target); [key]: target at the start of a line.
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def links(text):
    """Yields (line number, target) for every relative link of one page, outside code."""
    in_fence = False
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
            continue
        if in_fence or line.startswith("    ") or line.startswith("\t"):
            continue
        line = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        m = REFERENCE_DEF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if SCHEME.match(target) or target.startswith("#"):
                continue
            yield lineno, target


def link_resolves(page, target, tracked, tracked_dirs):
    path = target.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return True
    full = os.path.normpath(os.path.join(os.path.dirname(page), path))
    return full in tracked or full in tracked_dirs


def resolve(page, token, tracked):
    token = token.lstrip("./") if token.startswith("./") else token
    candidates = [os.path.normpath(os.path.join(os.path.dirname(page), token)), os.path.normpath(token)]
    return any(c in tracked for c in candidates)


POINTER = re.compile(r"`([A-Za-z_][\w:~]*)`\s*\(`([\w./-]+\.(?:h|cc|py|sh)):(\d+)`\)")


def pointer_pages(root):
    """The pages that point into code by line: README.md, docs/, and the READMEs under src/."""
    found = set(pages(root, set()))
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        if "README.md" in files:
            found.add(os.path.relpath(os.path.join(dirpath, "README.md"), root))
    return sorted(found)


def stale_pointers(root, page, text):
    """Code pointers written `name` (`path:line`) whose line no longer names `name`."""
    stale = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in POINTER.finditer(line):
            name, path, target = m.group(1), m.group(2), int(m.group(3))
            ident = name.split("::")[-1]
            for candidate in (os.path.join(os.path.dirname(page), path), path):
                full = os.path.join(root, candidate)
                if os.path.isfile(full):
                    with open(full, encoding="utf-8", errors="replace") as f:
                        code = f.read().splitlines()
                    if not (1 <= target <= len(code) and ident in code[target - 1]):
                        stale.append(f"{page}:{lineno} -> {path}:{target} does not name {ident}")
                    break
            else:
                stale.append(f"{page}:{lineno} -> {path}: no such file")
    return stale


def main(argv):
    if len(argv) > 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    tracked = tracked_files(root)
    tracked_dirs = {os.path.dirname(p) for p in tracked}
    for d in list(tracked_dirs):
        while d:
            d = os.path.dirname(d)
            tracked_dirs.add(d)
    missing = []
    broken = []
    checked = 0
    checked_links = 0
    for page in pages(root, tracked):
        with open(os.path.join(root, page), encoding="utf-8") as f:
            text = f.read()
        for lineno, token in mentions(text):
            if is_placeholder(token):
                continue
            checked += 1
            if not resolve(page, token, tracked):
                missing.append(f"{page}:{lineno} -> {token}")
        for lineno, target in links(text):
            checked_links += 1
            if not link_resolves(page, target, tracked, tracked_dirs):
                broken.append(f"{page}:{lineno} -> {target}")
    stale = []
    for page in pointer_pages(root):
        with open(os.path.join(root, page), encoding="utf-8") as f:
            stale += stale_pointers(root, page, f.read())
    if stale:
        print(f"docs check: {len(stale)} code pointer(s) out of date (`name` (`file:line`)):")
        for p in stale:
            print(f"  {p}")
    if missing:
        print(f"docs check: {len(missing)} named file(s) not committed (git ls-files):")
        for m in missing:
            print(f"  {m}")
    if broken:
        print(f"docs check: {len(broken)} relative link(s) that do not resolve:")
        for b in broken:
            print(f"  {b}")
    if missing or broken or stale:
        return 1
    print(f"docs check: ok, {checked} named files, all committed; {checked_links} relative links, all resolve")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))

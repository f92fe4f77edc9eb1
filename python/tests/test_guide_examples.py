"""The Python guide's examples run as written: every complete ```python block of
docs/guides/python.md (one that imports calico; fragments that continue an example are
not run), in a fresh interpreter, with its /tmp paths moved into a temporary directory (so
a stale /tmp/... from an earlier run cannot make it pass or fail)."""

import pathlib
import re
import subprocess
import sys

import pytest

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guides" / "python.md"


def examples():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    return [b for b in blocks if "import numpy as np, calico" in b]


def test_the_guide_has_its_examples():
    codes = examples()
    assert len(codes) >= 2
    assert any("ids=doc_ids" in c and "filter=" in c and "delete(" in c for c in codes)
    assert any("labels=owner" in c and "labels=7" in c and "get_label(" in c for c in codes)


@pytest.mark.parametrize("i", range(len(examples())))
def test_guide_example_runs(i, tmp_path):
    code = examples()[i]
    assert '"/tmp/' in code  # every example names its data directory under /tmp
    code = code.replace('"/tmp/', f'"{tmp_path}/')
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=900)

"""`pip install .` from a clean clone into a fresh virtualenv, then import calico and run a
tiny search. Slow (one full build; ccache and pip's cache keep it to about a minute when
warm); never skipped: a machine that cannot build the package fails this test."""

import os
import shutil
import subprocess
import sys
import textwrap

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(cmd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def test_pip_install_from_a_clean_clone_into_a_fresh_virtualenv():
    # Under the repository (build-python/ is ignored by git): ccache's base_dir covers it, so
    # the clone's build hits the cache of earlier builds.
    work = os.path.join(REPO, "build-python", "install-test")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src, venv = os.path.join(work, "src"), os.path.join(work, "venv")
    run(["git", "clone", "--quiet", REPO, src])  # the committed state, nothing else
    run([sys.executable, "-m", "venv", venv])
    py = os.path.join(venv, "bin", "python")
    run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", src])
    out = run([py, "-c", textwrap.dedent(f"""
        import numpy as np, calico
        assert calico.__file__.startswith({venv!r}), calico.__file__
        x = np.random.default_rng(0).random((100, 8), dtype=np.float32)
        with calico.Pool({os.path.join(work, "db")!r}, pool_bytes=8 << 20) as pool:
            h = calico.HnswIndex(pool, "h", dim=8, capacity=100)
            h.add(x)
            ids, _ = h.search(x[:3], k=1)
            print(ids[:, 0].tolist())
    """)], cwd=work)
    assert out.strip() == "[0, 1, 2]"
    shutil.rmtree(work, ignore_errors=True)

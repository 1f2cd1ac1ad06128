"""The distribution installs one package, `palimpsest`, and a fresh environment imports the face from it.

Why: before the layout move the wheel put `api`, `graph`, `schema` and `extraction` at the top of
site-packages, where PyPI's `schema` library and an agent project's own `api/` package collide with them.
This builds the wheel the way a user's `pip install .` does and looks inside it, then installs it (without
dependencies) into a new virtualenv whose only other path is this environment's site-packages — not its
editable install — so `from palimpsest import Memory` there can only come from the wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


# What the build reads: the project file, the README it embeds, the face with its links, the layers.
SOURCES = ("pyproject.toml", "README.md", "palimpsest", "schema", "graph", "extraction", "api")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy (links kept as links), so the build's own folders never land in the checkout.
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(src)], check=True, capture_output=True, text=True)
    (built,) = out.glob("palimpsest-*.whl")
    return built


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"palimpsest"}
    for layer in ("schema", "graph", "extraction", "api"):
        assert f"palimpsest/{layer}/__init__.py" in names
    assert any(n.startswith("palimpsest/schema/migrations/") and n.endswith(".cypher") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "palimpsest = palimpsest.api.cli:app" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_a_fresh_virtualenv_imports_memory_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    py = env / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # The dependencies come from this environment's site-packages as a plain path entry: its .pth files
    # (the editable install's finder among them) are not processed, so `palimpsest` resolves to the wheel.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True, text=True)
    probe = ("import palimpsest, sys; from palimpsest import Memory, ClaimInput, PalimpsestError; "
             "import palimpsest.api.memory as m; print(palimpsest.__file__); print(m.__file__); "
             "print(Memory is m.Memory); print(sorted(n for n in ('api', 'graph', 'schema', 'extraction') "
             "if n in sys.modules))")
    out = subprocess.run([str(py), "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}).stdout.splitlines()
    assert Path(out[0]).is_relative_to(site) and Path(out[1]).is_relative_to(site), out
    assert out[2:] == ["True", "[]"]
    cli = subprocess.run([str(env / "bin" / "palimpsest"), "--help"], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert cli.returncode == 0 and "ingest" in cli.stdout, cli.stderr

"""benchmarks/compare.py's parts that decide its numbers (issue 31): what is counted, and how."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import compare  # noqa: E402


def test_cpu_time_counts_the_work_of_the_processes_children():
    """A batch's workers are children of gradcli's process: their CPU time must count."""
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    parent = ("import subprocess, sys\n"
              f"subprocess.run([sys.executable, '-c', {burn!r}], check=True)")
    sample = compare.measure([sys.executable, "-c", parent])
    assert sample.cpu >= 0.3
    assert sample.wall >= 0.3


def test_an_unexpected_exit_status_stops_the_comparison_with_the_error():
    with pytest.raises(SystemExit, match="exit 3"):
        compare.measure([sys.executable, "-c", "import sys; sys.exit(3)"])


def test_the_spread_is_the_median_ratio_and_its_extremes():
    assert compare._spread([0.9, 1.2, 0.8]) == "0.90 (0.80-1.20)"
    assert compare._ratio([2.0, 4.0, 1.0], [1.0, 3.0, 1.0]) == "0.75 (0.50-1.00)"
    assert compare._spread([]) == "-"


def test_a_commit_is_exported_with_its_files(tmp_path):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    label = compare.export(head, tmp_path / "tree")
    assert label.startswith(head)
    assert (tmp_path / "tree" / "pyproject.toml").read_bytes() == subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{head}:pyproject.toml"], capture_output=True,
        check=True).stdout
    assert (tmp_path / "tree" / "src" / "gradcli" / "cli" / "eval_command.py").is_file()


def test_a_failing_sweep_stops_the_comparison_with_its_error(tmp_path):
    """W5 runs a script in the version's own Python: its failure names the version and shows
    the script's error (an old tree whose modules moved, say), not a bare CalledProcessError."""
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\necho 'ImportError: no gradcli.vector' >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(SystemExit, match=r"W5 in c7a1259: exit 1\nImportError: no gradcli"):
        compare._sweep(compare.Version("c7a1259", tmp_path))


def _version_with_help(folder: Path, label: str, help_text: str) -> compare.Version:
    script = folder / label / "bin" / "gradcli"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!/bin/sh\necho '{help_text}'\n")
    script.chmod(0o755)
    return compare.Version(label, folder / label)


def test_a_batch_mode_an_old_version_lacks_is_left_out_for_both(tmp_path, capsys):
    """c7a1259, issue 31's baseline, has no --no-nodes: W2 then compares the two modes both
    versions have, and says what it left out, instead of stopping at the old one's exit 2."""
    old = _version_with_help(tmp_path, "old", "--no-check  --check-nodes")
    new = _version_with_help(tmp_path, "new", "--no-check  --check-nodes  --no-nodes")
    args = compare.argparse.Namespace(only="W2", batch=3)

    def names(versions: list[compare.Version]) -> list[str]:
        return [item.name for item in compare.workloads_to_run(args, tmp_path, versions)]

    assert [name.split(", ")[1] for name in names([new, new])] == [
        "--json --no-check", "--json (check on)", "--json --no-nodes (check on)"]
    assert names([old, new]) == names([new, new])[:2]
    assert "W2 --no-nodes left out" in capsys.readouterr().err


def test_a_version_whose_help_fails_stops_the_comparison(tmp_path):
    broken = _version_with_help(tmp_path, "broken", "x")
    (broken.venv / "bin" / "gradcli").write_text("#!/bin/sh\necho 'no module' >&2\nexit 1\n")
    with pytest.raises(SystemExit, match=r"--help in broken: exit 1\nno module"):
        compare._has_option(broken, "--no-nodes")

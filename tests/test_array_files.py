"""Arrays from NumPy's files and CSV, and results saved for NumPy (issue 30): ``--W W.npy``,
``--W W.csv``, ``--W data.npz``, ``--values data.npz``, ``at = {W = "W.npy"}`` in a check file,
``eval --save out.npz``. The answers are NumPy's own, computed here by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.limits import MAX_ARRAY_ELEMENTS, MAX_VALUES_FILE_BYTES

RNG = np.random.default_rng(30)
W, X, B, T = (RNG.normal(size=shape) for shape in ((4, 3), (3,), (4,), (4,)))
PROGRAM = "mean((W@x + b - t)**2)"


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def by_hand() -> tuple[float, dict[str, np.ndarray]]:
    """The value and gradients of PROGRAM, as a NumPy user writes them."""
    error = W @ X + B - T
    g = 2 * error / error.size
    return float(np.mean(error**2)), {"W": np.outer(g, X), "x": W.T @ g, "b": g, "t": -g}


def assert_matches(record: dict) -> None:
    value, gradients = by_hand()
    assert record["value"] == pytest.approx(value, rel=1e-14)
    for name, gradient in gradients.items():
        np.testing.assert_allclose(record["gradients"][name], gradient, rtol=1e-13, atol=1e-15)


def test_each_variable_from_its_own_kind_of_file(tmp_path):
    np.save(tmp_path / "W.npy", W)
    np.savetxt(tmp_path / "x.csv", X[None, :], delimiter=",")  # one row: a vector
    np.savetxt(tmp_path / "b.csv", B[:, None], delimiter=",", header="b as a column")
    np.savez(tmp_path / "more.npz", t=T, unused=np.zeros(2))
    done = run("eval", PROGRAM, "--W", str(tmp_path / "W.npy"), "--x", str(tmp_path / "x.csv"),
               "--b", str(tmp_path / "b.csv"), "--t", str(tmp_path / "more.npz"), "--json")
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert record["check"]["ok"]
    assert_matches(record)


def test_values_from_an_archive_by_name_and_the_command_line_overrides(tmp_path):
    np.savez(tmp_path / "data.npz", W=W, x=X, b=B, t=T + 1)
    done = run("eval", PROGRAM, "--values", str(tmp_path / "data.npz"), "--t",
               json.dumps(T.tolist()), "--json")
    assert done.exit_code == 0, done.output
    assert_matches(json.loads(done.stdout))


def test_a_values_file_in_json_is_no_longer_capped_at_8_mb(tmp_path):
    big = RNG.normal(size=(700, 700))
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"A": big.tolist()}))
    assert path.stat().st_size > 8 * 2**20
    done = run("eval", "sum(A*A)", "--values", str(path), "--no-check", "--json")
    assert done.exit_code == 0, done.output[:300]
    assert json.loads(done.stdout)["value"] == pytest.approx(float(np.sum(big * big)), rel=1e-12)
    assert MAX_VALUES_FILE_BYTES >= 2**24 * 25


def test_saved_results_are_what_numpy_computes(tmp_path):
    np.savez(tmp_path / "data.npz", W=W, x=X, b=B, t=T)
    out = tmp_path / "grads.npz"
    done = run("eval", PROGRAM, "--values", str(tmp_path / "data.npz"), "--save", str(out))
    assert done.exit_code == 0, done.output
    saved = np.load(out)
    value, gradients = by_hand()
    assert float(saved["value"]) == pytest.approx(value, rel=1e-14)
    for name, gradient in gradients.items():
        np.testing.assert_allclose(saved[f"grad/{name}"], gradient, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(saved[f"point/{name}"], {"W": W, "x": X, "b": B,
                                                              "t": T}[name])
    assert bool(saved["check_ok"]) and float(saved["check_max_abs_error"]) < 1e-6
    # a scalar program's Hessian, and several outputs' Jacobian
    run("eval", "x**2*y", "--x", "3", "--y", "2", "--hessian", "--save", str(out))
    saved = np.load(out)
    assert (float(saved["hessian/x/x"]), float(saved["hessian/x/y"])) == (4.0, 6.0)
    run("eval", "f = x*y; g = x + y; f, g", "--x", "3", "--y", "2", "--save", str(out))
    saved = np.load(out)
    assert float(saved["jacobian/f/x"]) == 2.0 and float(saved["jacobian/g/y"]) == 1.0


@pytest.mark.parametrize(("args", "words"), [
    (["x*y", "--x", "2", "--save", "out.npz"], "y has no value"),
    (["x", "--x", "1", "--save", "out.txt"], "does not end in .npz"),
    (["x", "--x", "1:3:3", "--save", "out.npz"], "one program at one point"),
    (["x", "--x", "1", "--save", "/dev/full"], "does not end in .npz"),
    (["x", "--x", "1", "--save", "/nonexistent-dir/out.npz"], "cannot write"),
])
def test_save_mistakes_are_usage_errors(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = run("eval", *args)
    assert done.exit_code == 2 and words in done.output, done.output
    assert not (tmp_path / "out.npz").exists()


def test_a_full_disk_leaves_no_half_archive(tmp_path, monkeypatch):
    import gradcli.cli.files as files

    def full(descriptor, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "_write_all", full)
    out = tmp_path / "g.npz"
    done = run("eval", "x*2", "--x", "1", "--save", str(out))
    assert done.exit_code == 2 and "No space left on device" in done.output
    assert list(tmp_path.iterdir()) == []


def _claiming(path, shape: tuple[int, ...]) -> None:
    """An .npz archive whose one member's .npy header claims ``shape`` over 80 bytes of data."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("W.npy", header.getvalue() + bytes(80))


def _damaged(path, cut: bool) -> None:
    """An .npz archive cut short, or with a byte of its data flipped (a bad CRC)."""
    np.savez(path, W=W)
    data = bytearray(path.read_bytes())
    if cut:
        del data[200:]
    else:
        data[120] ^= 0xFF
    path.write_bytes(bytes(data))


def _make(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        content(path)
    return str(path)


@pytest.mark.parametrize(("name", "content", "words"), [
    ("W.npy", lambda p: np.save(p, np.array(["a", "b"])), "holds <U1 values, not numbers"),
    ("W.npy", lambda p: np.save(p, np.array([1.0, np.inf])), "has inf at [1]"),
    ("W.npy", lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),
     "no pickled objects"),
    ("W.npy", b"\x93NUMPY\x01\x00garbage", "cannot read"),
    ("W.npy", lambda p: np.lib.format.open_memmap(p, mode="w+", shape=(MAX_ARRAY_ELEMENTS + 1,)),
     "over the limit"),
    ("W.csv", "a,b\n1,2\n", "not a CSV table of numbers"),
    ("W.csv", "1,2\n3\n", "not a CSV table of numbers"),
    # NumPy's own advice names its option usecols, no option of gradcli's (a bug hunt)
    ("W.csv", "1,2,3\n4,5\n", "the number of columns changed from 3 to 2 at row 2\n"),
    ("W.csv", b"\xff\xfe\x00\x01binary", "neither CSV text nor a NumPy file"),
    ("W.csv", "# only a comment\n", "has no numbers"),
    ("d.npz", lambda p: np.savez(p, a=np.ones(2), b=np.ones(2)), "has no array named W"),
    # an archive whose member's header claims 10^10 elements in 80 bytes: NumPy's
    # MemoryError made a traceback (a bug hunt), the header is read first now
    ("W.npz", lambda p: _claiming(p, (100_000, 100_000)), "has 10,000,000,000 elements"),
    ("missing.npy", None, "cannot read"),
    # zipfile's own errors were tracebacks at status 1 (a bug hunt)
    ("W.npz", lambda p: _damaged(p, cut=True), "as a NumPy file: File is not a zip file"),
    ("W.npz", lambda p: _damaged(p, cut=False), "as a NumPy file: Bad CRC-32"),
    ("W.npz", b"PK\x03\x04" + b"junk" * 20, "as a NumPy file: File is not a zip file"),
])
def test_bad_array_files_are_one_line_errors(tmp_path, name, content, words):
    path = str(tmp_path / name) if content is None else _make(tmp_path, name, content)
    done = run("eval", "sum(W)", "--W", path)
    assert done.exit_code == 2 and words in done.output, done.output
    assert "Traceback" not in done.output


def test_values_takes_an_archive_not_one_array_and_never_decodes_binary(tmp_path):
    np.save(tmp_path / "W.npy", W)
    done = run("eval", "sum(W)", "--values", str(tmp_path / "W.npy"))
    assert done.exit_code == 2 and "is one array (.npy)" in done.output
    # an .npy misnamed .json is still read by its bytes: never 'not UTF-8'
    (tmp_path / "W.json").write_bytes((tmp_path / "W.npy").read_bytes())
    done = run("eval", "sum(W)", "--values", str(tmp_path / "W.json"))
    assert done.exit_code == 2 and "is one array (.npy)" in done.output


def test_a_check_file_names_array_files_beside_it(tmp_path):
    np.save(tmp_path / "W.npy", W)
    np.savez(tmp_path / "rest.npz", x=X, b=B, t=T)
    value, gradients = by_hand()
    (tmp_path / "checks.toml").write_text(
        '[[check]]\nname = "linear layer"\n'
        f'expr = "{PROGRAM}"\n'
        'at = {W = "W.npy", x = "rest.npz", b = "rest.npz", t = "rest.npz"}\n'
        f"value = {value!r}\n"
        f"gradients = {{b = {gradients['b'].tolist()!r}}}\n")
    done = run("check", str(tmp_path / "checks.toml"), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["ok"]
    (tmp_path / "bad.toml").write_text('[[check]]\nname = "b"\nexpr = "sum(W)"\n'
                                       'at = {W = "nowhere.npy"}\n')
    done = run("check", str(tmp_path / "bad.toml"))
    assert done.exit_code == 2 and "bad.toml:4: check.at.W: cannot read" in done.output


def test_a_values_file_from_a_pipe_is_read_whole(tmp_path):
    """``--values <(...)`` is a pipe: telling a NumPy file by its first bytes must not eat them
    (found in review: the pipe lost its first 6 bytes)."""
    import os
    import threading

    fifo = tmp_path / "values"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('{"x": 2}'))
    writer.start()
    done = run("eval", "x*3", "--values", str(fifo), "--json", "--no-check")
    writer.join(timeout=10)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["value"] == 6.0


@pytest.mark.parametrize("kind", ["npy", "npz", "csv"])
def test_an_array_file_from_a_pipe_is_read_once_whole(tmp_path, kind):
    """A pipe named W.npy (a FIFO, ``<(...)``): its first bytes tell the kind, and are not lost
    when the array is read after them."""
    import io
    import os
    import threading

    buffer = io.BytesIO()
    {"npy": lambda: np.save(buffer, W), "npz": lambda: np.savez(buffer, W=W),
     "csv": lambda: np.savetxt(buffer, W, delimiter=",")}[kind]()
    fifo = tmp_path / f"W.{kind}"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(buffer.getvalue()))
    writer.start()
    done = run("eval", "sum(W)", "--W", str(fifo), "--json", "--no-check")
    writer.join(timeout=10)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["value"] == pytest.approx(W.sum(), rel=1e-15)


def test_a_link_to_an_endless_device_is_refused_at_the_largest_array(tmp_path):
    """A link to /dev/zero (git stores links, so a check file's directory may hold one) was
    read until memory ran out: a MemoryError traceback under a memory limit (a bug hunt)."""
    (tmp_path / "W.npy").symlink_to("/dev/zero")
    done = run("eval", "sum(W)", "--W", str(tmp_path / "W.npy"))
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert f"is not a regular file and gives more than {2 * MAX_ARRAY_ELEMENTS:,} bytes" in (
        done.output)
    (tmp_path / "c.toml").write_text('[[check]]\nname = "z"\nexpr = "sum(W)"\n'
                                     'at = {W = "W.npy"}\n')
    done = run("check", str(tmp_path / "c.toml"))
    assert done.exit_code == 2 and "c.toml:4: check.at.W:" in done.output
    assert "is not a regular file" in done.output


def test_a_csv_table_with_a_byte_order_mark_is_read(tmp_path):
    """A spreadsheet saves CSV as UTF-8 with a BOM: '\ufeff1' was 'not a number'."""
    (tmp_path / "W.csv").write_bytes(b"\xef\xbb\xbf1,2,3\n4,5,6\n")
    done = run("eval", "sum(W)", "--W", str(tmp_path / "W.csv"), "--json", "--no-check")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["value"] == 21.0


def test_a_pipe_whose_table_is_refused_is_not_read_twice(tmp_path):
    """eval's quick path read the pipe, found the table bad and handed the command line to
    click, which opened the pipe again and waited for a writer forever (a review)."""
    import os
    import subprocess
    import sys
    import threading

    fifo = tmp_path / "W.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("1,2\n3\n"))
    writer.start()
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval", "sum(W)", "--W", str(fifo),
                           "--no-check"], capture_output=True, text=True, timeout=60,
                          check=False)
    writer.join(timeout=10)
    assert done.returncode == 2 and "not a CSV table of numbers" in done.stderr

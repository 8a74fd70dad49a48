"""Writing the JUnit report (issue 13): ``write_atomically`` writes all or nothing, and a report
that cannot be written never hides the results of the checks.

Tests run as root, where a read-only directory does not stop a write: unwritable places are
``/dev/full`` (a full disk), ``/proc`` (no new files), a path whose parent is a regular file, and
``os.write``/``os.replace`` made to fail.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.cli import files as files_module
from gradcli.cli.files import write_atomically

pytest.importorskip("numpy")

# one check passes, one fails (status 1), one has a numeric error (status 3)
CHECKS = """
[[check]]
name = "good"
expr = "x*x"
sweep = {x = "-1:1:5"}
derivative = {x = "2*x"}

[[check]]
name = "wrong"
expr = "x*x"
at = {x = 2}
value = 5

[[check]]
name = "log"
expr = "log(x)"
sweep = {x = "0:1:3"}
finite = true
"""


def run(tmp_path, *args: str, text: str = CHECKS, github: bool = False):
    path = tmp_path / "checks.toml"
    path.write_text(text)
    env = {"GITHUB_ACTIONS": "true" if github else ""}
    result = CliRunner().invoke(cli, ["check", str(path), *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


# --- the writer ---------------------------------------------------------------------------------

def test_a_new_file_gets_the_data_and_the_usual_mode(tmp_path):
    target = tmp_path / "report.xml"
    write_atomically(str(target), b"<a/>")
    assert target.read_bytes() == b"<a/>" and leftovers(tmp_path) == []
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_a_file_replaced_keeps_its_mode(tmp_path):
    target = tmp_path / "report.xml"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_atomically(str(target), b"new")
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_symbolic_link_is_followed(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "report.xml"
    real.write_bytes(b"old")
    link = tmp_path / "link.xml"
    link.symlink_to(real)
    write_atomically(str(link), b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_relative_path_is_written_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_atomically("report.xml", b"data")
    assert (tmp_path / "report.xml").read_bytes() == b"data" and leftovers(tmp_path) == []


def test_a_full_disk_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.xml"
    target.write_bytes(b"the old report")
    real_write, calls = os.write, []

    def write(descriptor, data):  # half of the data, then the disk is full
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(descriptor, bytes(data[: len(data) // 2]))

    monkeypatch.setattr(files_module.os, "write", write)
    with pytest.raises(OSError) as caught:
        write_atomically(str(target), b"x" * 100_000)
    assert caught.value.errno == errno.ENOSPC and len(calls) == 2
    assert target.read_bytes() == b"the old report" and leftovers(tmp_path) == []


def test_a_failing_rename_leaves_no_file_and_no_temporary(tmp_path, monkeypatch):
    def replace(source, target):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(files_module.os, "replace", replace)
    with pytest.raises(OSError):
        write_atomically(str(tmp_path / "report.xml"), b"data")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("make", "strerror"), [
    (lambda tmp: "/dev/full", "No space left on device"),
    (lambda tmp: "/proc/gradcli-report.xml", None),
    (lambda tmp: str(tmp / "file" / "report.xml"), "Not a directory"),
    (lambda tmp: str(tmp / "missing" / "report.xml"), "No such file or directory"),
    (lambda tmp: "", "an empty path is not a file name"),
])
def test_an_unwritable_path_is_an_os_error(tmp_path, make, strerror):
    (tmp_path / "file").write_text("a regular file")
    with pytest.raises(OSError) as caught:
        write_atomically(make(tmp_path), b"data")
    assert strerror is None or caught.value.strerror == strerror
    assert leftovers(tmp_path) == []


def test_devices_are_written_in_place():
    write_atomically("/dev/null", b"data")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # not replaced by a file


WRITER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("files", sys.argv[3])  # stdlib only: starts fast
files = importlib.util.module_from_spec(spec)
spec.loader.exec_module(files)
write_atomically = files.write_atomically
name = sys.argv[2]
body = "".join(f'<case name="{name}" n="{i}"/>' for i in range(20000))
write_atomically(sys.argv[1], f'<suite name="{name}">{body}</suite>'.encode())
"""


def test_two_writers_of_the_same_path_leave_one_whole_file(tmp_path):
    # before: two `check --junit same.xml` at once wrote malformed XML 2 times in 20
    target = tmp_path / "same.xml"
    for _ in range(20):
        writers = [subprocess.Popen([sys.executable, "-S", "-c", WRITER, str(target), name,
                                     files_module.__file__]) for name in ("first", "second")]
        assert [writer.wait(timeout=60) for writer in writers] == [0, 0]
        root = ET.parse(target).getroot()
        assert root.get("name") in ("first", "second") and len(root) == 20000
        assert {case.get("name") for case in root} == {root.get("name")}
    assert leftovers(tmp_path) == []


def test_two_gradcli_checks_writing_one_report_leave_valid_xml(tmp_path):
    checks = tmp_path / "checks.toml"
    checks.write_text(CHECKS)
    target = tmp_path / "report.xml"
    command = [sys.executable, "-m", "gradcli", "check", str(checks), "--junit", str(target)]
    for _ in range(3):
        runs = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(2)]
        assert [run.wait(timeout=120) for run in runs] == [3, 3]
        assert ET.parse(target).getroot().get("tests") == "3"
    assert leftovers(tmp_path) == []


# --- gradcli check --junit ------------------------------------------------------------------------

UNWRITABLE = ["/dev/full", "/proc/gradcli-report.xml", "{tmp}/file/report.xml"]


@pytest.mark.parametrize("target", UNWRITABLE)
def test_an_unwritable_report_still_shows_the_results_and_their_status(tmp_path, target):
    (tmp_path / "file").write_text("a regular file")
    target = target.format(tmp=tmp_path)
    result = run(tmp_path, "--junit", target)
    # the numeric error's 3 outranks the report's 2
    assert result.exit_code == 3
    assert "good" in result.stdout and "wrong" in result.stdout and "log" in result.stdout
    assert "1 of 3 checks" in result.stdout or "2 of 3 checks" in result.stdout
    (line, hint) = result.stderr.splitlines()
    assert line.startswith(f"error: usage error: cannot write the JUnit report {target}: ")
    assert hint == "  hint: give --junit a path in a writable directory"


def test_an_unwritable_report_after_failed_checks_is_status_2(tmp_path):
    text = CHECKS.split("[[check]]\nname = \"log\"")[0]  # good and wrong: status 1
    assert run(tmp_path, text=text).exit_code == 1
    result = run(tmp_path, "--junit", "/dev/full", text=text)
    assert result.exit_code == 2 and "wrong" in result.stdout


def test_an_unwritable_report_after_passing_checks_is_status_2(tmp_path):
    text = CHECKS.split("[[check]]\nname = \"wrong\"")[0]
    result = run(tmp_path, "--junit", "/dev/full", text=text)
    assert result.exit_code == 2 and "1 check passed" in result.stdout


def test_json_with_an_unwritable_report_holds_the_checks_and_the_error(tmp_path):
    result = run(tmp_path, "--json", "--junit", "/dev/full")
    document = json.loads(result.stdout)
    assert result.exit_code == 3 and document["status"] == 3 and not document["ok"]
    assert [check["name"] for check in document["checks"]] == ["good", "wrong", "log"]
    (error,) = document["errors"]
    assert (error["kind"], error["file"]) == ("usage", None)
    assert error["message"] == ("cannot write the JUnit report /dev/full: "
                                "No space left on device")
    assert result.stderr.startswith("gradcli: usage error: cannot write the JUnit report")


def test_annotations_are_printed_when_the_report_cannot_be_written(tmp_path):
    result = run(tmp_path, "--junit", "/dev/full", github=True)
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 2, result.stdout  # "wrong" and "log"
    assert result.exit_code == 3


def test_an_empty_junit_path_says_so_before_running(tmp_path):
    result = run(tmp_path, "--junit", "")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: usage error: --junit was given an empty path",
        "  hint: give --junit the file to write, e.g. report.xml"]


def test_the_report_is_written_whole_next_to_no_temporary(tmp_path):
    target = tmp_path / "out" / "report.xml"
    target.parent.mkdir()
    result = run(tmp_path, "--junit", str(target))
    assert result.exit_code == 3
    root = ET.parse(target).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    assert os.listdir(target.parent) == ["report.xml"]

"""The GitHub Action and the CI recipes of docs/ci.md (issue 19), run on this machine.

The action's shell steps run as a runner runs them (``bash -eo pipefail``, inputs through their
``env:`` blocks, ``$GITHUB_PATH`` and ``$GITHUB_OUTPUT`` files), installing gradcli into a fresh
virtual environment from the action's own checkout -- this repository. The recipes' commands run
with the repository's URL replaced by this repository (``git+file://``, at HEAD). One install
from scratch is shared by the tests here (about half a minute with pip's cache); only the full
pre-commit run, which builds its own environment, is marked slow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
CI_DOC = (ROOT / "docs" / "ci.md").read_text("utf-8")
URL = "https://github.com/OWNER/gradcli"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def yaml_blocks() -> list[dict | list]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", CI_DOC, re.S)]


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()


def local(command: str) -> str:
    """A recipe's command with the repository's URL made this repository, at HEAD."""
    return command.replace(f"{URL}@main", f"file://{ROOT}@{head()}")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A project with check files: one that passes, one with a sign typo that fails."""
    root = tmp_path_factory.mktemp("project")
    (root / "checks").mkdir()
    (root / "checks" / "good.toml").write_text(
        '[[check]]\nname = "square"\nexpr = "x**2"\nsweep = {x = "-2:2:5"}\n'
        'derivative = {x = "2*x"}\n')
    (root / "checks" / "broken.toml").write_text(
        '[[check]]\nname = "sigmoid derivative (sign typo)"\nexpr = "sigmoid(x)"\n'
        'sweep = {x = "-4:4:9"}\nderivative = {x = "sigmoid(x) * (1 + sigmoid(x))"}\n')
    return root


class Runner:
    """The parts of a GitHub runner that the action's shell steps use."""

    def __init__(self, temp: Path) -> None:
        self.temp = temp
        self.path_file = temp / "github_path"
        self.path_file.touch()
        self.outputs_file = temp / "github_output"

    def run_steps(self, inputs: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
        """Every ``run:`` step of action.yml in order, stopping at the first that fails."""
        values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        values.update(inputs)
        self.outputs_file.write_text("")
        done = None
        for step in ACTION["runs"]["steps"]:
            if "run" not in step:
                continue
            assert step["shell"] == "bash" and "${{" not in step["run"], step["name"]
            env = {name: self.substitute(text, values) for name, text in step["env"].items()}
            extra = self.path_file.read_text().split()
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=cwd, capture_output=True, text=True, check=False, timeout=300,
                env={**os.environ, **env, "RUNNER_TEMP": str(self.temp),
                     "GITHUB_PATH": str(self.path_file), "GITHUB_OUTPUT": str(self.outputs_file),
                     "GITHUB_ACTIONS": "true",
                     "PATH": os.pathsep.join([*extra, os.environ["PATH"]])})
            if done.returncode != 0:
                break
        assert done is not None
        return done

    @staticmethod
    def substitute(text: str, inputs: dict[str, str]) -> str:
        def value(match: re.Match[str]) -> str:
            scope, _, name = match.group(1).partition(".")
            if scope == "inputs":
                return inputs[name]
            assert match.group(1) == "github.action_path", match.group(1)
            return str(ROOT)

        return EXPRESSION.sub(value, text)

    def outputs(self) -> dict[str, str]:
        return dict(line.split("=", 1) for line in self.outputs_file.read_text().splitlines())

    def venv_bin(self) -> Path:
        return Path(self.path_file.read_text().split()[0])


@pytest.fixture(scope="module")
def runner(tmp_path_factory, workspace):
    """The action run once from scratch: a fresh virtual environment with gradcli installed."""
    runner = Runner(tmp_path_factory.mktemp("runner"))
    done = runner.run_steps({"files": "checks/good.toml"}, workspace)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return runner


def test_the_action_installs_gradcli_and_fails_on_a_failing_check(runner, workspace):
    venv = runner.venv_bin().parent
    assert venv.parent == runner.temp and (venv / "bin" / "gradcli").exists()
    version = subprocess.run([venv / "bin" / "gradcli", "--version"], capture_output=True,
                             text=True, check=True).stdout
    assert "symbolic core: Python" in version  # a plain install compiles nothing
    done = runner.run_steps({"files": "checks/*.toml", "junit": "report.xml"}, workspace)
    assert done.returncode == 1 and runner.outputs() == {"status": "1"}
    # a failure is an annotation on the check file's line
    assert re.search(r"^::error file=checks/broken\.toml,line=\d+", done.stdout, re.M)
    report = ET.parse(workspace / "report.xml").getroot()
    cases = {case.get("name"): case for case in report.iter("testcase")}
    assert cases["square"].find("failure") is None
    assert cases["sigmoid derivative (sign typo)"].find("failure") is not None


def test_the_action_passes_and_takes_args(runner, workspace):
    done = runner.run_steps({"files": "checks/good.toml\nchecks/broken.toml",
                             "args": "-k square"}, workspace)
    assert done.returncode == 0 and runner.outputs() == {"status": "0"}, done.stdout
    assert (workspace / "gradcli-junit.xml").exists()  # the default report path


def test_the_action_refuses_a_pattern_that_matches_nothing(runner, workspace):
    done = runner.run_steps({"files": "chekcs/*.toml"}, workspace)
    assert done.returncode == 2 and "::error::no check file matches chekcs/*.toml" in done.stdout


def test_the_action_s_other_steps_use_its_inputs():
    steps = {step["name"]: step for step in ACTION["runs"]["steps"]}
    setup = steps["Set up Python"]
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["python-version"] == "${{ inputs.python-version }}"
    upload = steps["Upload the JUnit report"]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"] == {"name": "${{ inputs.artifact-name }}",
                              "path": "${{ inputs.junit }}", "if-no-files-found": "warn"}
    assert upload["if"].startswith("always()")
    documented = set(re.findall(r"^\| `([\w-]+)` \|", CI_DOC, re.M))
    assert documented == set(ACTION["inputs"])  # every input in docs/ci.md's table
    assert all(spec["description"] for spec in ACTION["inputs"].values())


def test_the_workflow_recipe_uses_the_action():
    workflow = next(b for b in yaml_blocks() if isinstance(b, dict) and "jobs" in b)
    steps = workflow["jobs"]["gradcli"]["steps"]
    assert steps[1] == {"uses": "OWNER/gradcli@main", "with": {"files": "checks/*.toml"}}
    assert set(steps[1]["with"]) <= set(ACTION["inputs"])


def test_the_recipes_commands_install_from_git_and_check(runner, workspace, tmp_path):
    """The commands, in order, in a copy of the project; ``pip`` is the action's fresh
    environment's (its dependencies are there, gradcli is installed again from git). GitHub's
    and GitLab's recipes run the same commands, so they run once."""
    github = [step["run"] for step in next(b for b in yaml_blocks() if "steps" in b)["steps"]
              if "run" in step]
    gitlab = next(b for b in yaml_blocks() if "gradcli" in b)["gradcli"]["script"]
    assert github == gitlab and gitlab[0] == f'pip install "git+{URL}@main"'
    project = tmp_path / "project"
    shutil.copytree(workspace, project)
    (project / "checks" / "broken.toml").unlink()  # the project's checks pass
    env = {**os.environ, "PATH": f"{runner.venv_bin()}{os.pathsep}{os.environ['PATH']}",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for command in gitlab:
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", local(command)], cwd=project,
                              env=env, capture_output=True, text=True, check=False,
                              timeout=300)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    report = ET.parse(project / "gradcli-junit.xml").getroot()
    assert [case.get("name") for case in report.iter("testcase")] == ["square"]
    installed = subprocess.run([runner.venv_bin() / "pip", "show", "gradcli"], env=env,
                               capture_output=True, text=True, check=True).stdout
    assert "Version: " in installed


def test_the_pre_commit_hook_runs_gradcli_check_on_check_files(runner, workspace, tmp_path):
    """The hook's entry on the files its pattern selects: what pre-commit runs."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    config = next(b for b in yaml_blocks() if isinstance(b, dict) and "repos" in b)
    (entry,) = config["repos"][0]["hooks"]
    assert config["repos"][0]["repo"] == URL and entry["id"] == hook["id"]
    files = [path for path in ("checks/good.toml", "checks/broken.toml", "pyproject.toml")
             if re.search(entry["files"], path)]
    assert files == ["checks/good.toml", "checks/broken.toml"]
    done = subprocess.run([*hook["entry"].split(), *files], cwd=workspace, capture_output=True,
                          text=True, check=False,
                          env={**os.environ, "PATH": f"{runner.venv_bin()}{os.pathsep}"
                                                     f"{os.environ['PATH']}"})
    assert done.returncode == 1 and "sigmoid derivative (sign typo)" in done.stdout


@pytest.mark.slow
def test_pre_commit_installs_the_hook_from_git_and_runs_it(tmp_path, workspace):
    """pre-commit itself: it clones this repository at HEAD and builds the hook's
    environment (a minute or more), then fails the commit on a failing check."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "pre-commit"], check=True)
    project = tmp_path / "project"
    shutil.copytree(workspace, project)
    config = next(b for b in re.findall(r"```yaml\n(.*?)```", CI_DOC, re.S) if "repos:" in b)
    config = config.replace(URL, f"file://{ROOT}").replace("rev: main", f"rev: {head()}")
    (project / ".pre-commit-config.yaml").write_text(config)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "."], cwd=project, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    done = subprocess.run([str(venv / "bin" / "pre-commit"), "run", "--all-files"],
                          cwd=project, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "gradcli check" in done.stdout, done.stdout + done.stderr
    assert "sigmoid derivative (sign typo)" in done.stdout

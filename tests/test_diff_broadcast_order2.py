"""``gradcli diff --order 2`` of array programs whose operands broadcast (a 1 x n row, an m x 1
column, a vector or a number against a matrix), with values given and with ``--shape``: every
printed Hessian block is evaluated at the point and compared with HIPS autograd (test-only),
and no error names an internal expression. The programs with a row ``r`` guard reduce_to
(symbolic/arrays.py): a 1 x n gradient part for a vector operand is that vector, not an n x n
spread.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

pytestmark = pytest.mark.filterwarnings("ignore:Output seems independent of input")

POINT = {"X": np.array([[0.25, 0.5, 0.75], [1.0, 1.25, 1.5]]), "r": np.array([[0.3, 0.6, 0.9]]),
         "c": np.array([[0.5], [1.5]]), "v": np.array([0.3, 0.7, 1.1]), "s": np.array(0.8),
         "W": np.array([[0.2, 0.4], [0.6, 0.1], [0.5, 0.9]]), "b": np.array([0.1, -0.2])}

CASES = {  # gradcli's text: the same on autograd.numpy
    "sum(X*r)": lambda e: anp.sum(e["X"] * e["r"]),
    "sum(r*X)": lambda e: anp.sum(e["r"] * e["X"]),
    "sum(X*X*r)": lambda e: anp.sum(e["X"] * e["X"] * e["r"]),
    "sum((X + r)**2)": lambda e: anp.sum((e["X"] + e["r"]) ** 2),
    "sum((X - r)**2)": lambda e: anp.sum((e["X"] - e["r"]) ** 2),
    "sum(X/r)": lambda e: anp.sum(e["X"] / e["r"]),
    "sum(r/X)": lambda e: anp.sum(e["r"] / e["X"]),
    "sum(sin(X*r))": lambda e: anp.sum(anp.sin(e["X"] * e["r"])),
    "mean((X*r)**2)": lambda e: anp.mean((e["X"] * e["r"]) ** 2),
    "sum(max(X, r)*X)": lambda e: anp.sum(anp.maximum(e["X"], e["r"]) * e["X"]),
    "sum(where(X > r, X*r, X))":
        lambda e: anp.sum(anp.where(e["X"] > e["r"], e["X"] * e["r"], e["X"])),
    "sum(X*r*c)": lambda e: anp.sum(e["X"] * e["r"] * e["c"]),
    "sum((c*r)**2)": lambda e: anp.sum((e["c"] * e["r"]) ** 2),
    "sum((c + r)**3)": lambda e: anp.sum((e["c"] + e["r"]) ** 3),
    "sum((X*c)**2)": lambda e: anp.sum((e["X"] * e["c"]) ** 2),
    "sum((X*v)**2)": lambda e: anp.sum((e["X"] * e["v"]) ** 2),
    "sum((s*X)**2)": lambda e: anp.sum((e["s"] * e["X"]) ** 2),
    "sum((X@W + b)**2)": lambda e: anp.sum((e["X"] @ e["W"] + e["b"]) ** 2),
}


def _args(names: list[str], given: bool) -> list[str]:
    if given:
        return [arg for n in names for arg in (f"--{n}", json.dumps(POINT[n].tolist()))]
    return [arg for n in names
            for arg in ("--shape", f"{n}={'x'.join(map(str, POINT[n].shape)) or 'scalar'}")]


def _evaluated(text: str) -> np.ndarray:
    program = gradcli.parse(text)
    return np.asarray(gradcli.evaluate(program, {n: POINT[n] for n in program.variables},
                                       check=False).value, dtype=float)


def _hessian_block(fn, a: str, b: str) -> np.ndarray:
    """d2/da db by autograd: the Jacobian in b of the gradient in a (shape of a, then b)."""
    def grad_a(vb):
        env = {**POINT, b: vb}
        return autograd.grad(lambda va: fn({**env, a: va}))(env[a])
    return autograd.jacobian(grad_a)(POINT[b])


@pytest.mark.parametrize("given", [True, False], ids=["values", "shape"])
@pytest.mark.parametrize("text", sorted(CASES))
def test_hessian_blocks_agree_with_autograd(text, given):
    names = list(gradcli.parse(text).variables)
    done = CliRunner().invoke(cli, ["diff", text, "--order", "2", "--json",
                                    *_args(names, given)])
    assert done.exit_code == 0, done.output
    blocks = json.loads(done.stdout)["derivatives"]
    for a in names:
        for b in names:
            truth = _hessian_block(CASES[text], a, b)
            got = _evaluated(blocks[a][b])
            if got.ndim == 0:  # a block that is 0 prints as the number 0
                got = np.broadcast_to(got, truth.shape)
            assert got.shape == truth.shape, (text, a, b, blocks[a][b])
            np.testing.assert_allclose(got, truth, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{text} d2/d{a} d{b} = {blocks[a][b]}")


EXPORTED = ["sum(X*r)", "sum((X - r)**2)", "sum(X/r)", "sum((c*r)**2)", "sum((X@W + b)**2)"]


@pytest.mark.parametrize("text", EXPORTED)
def test_python_export_of_the_hessian_agrees_with_autograd(text, tmp_path):
    names = list(gradcli.parse(text).variables)
    done = CliRunner().invoke(cli, ["diff", text, "--order", "2", "--format", "python",
                                    *_args(names, False)])
    assert done.exit_code == 0, done.output
    path = tmp_path / "exported_hessian.py"
    path.write_text(done.stdout)
    spec = importlib.util.spec_from_file_location("exported_hessian", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    value, hessian = module.f(*(POINT[n] for n in names))
    np.testing.assert_allclose(value, CASES[text](POINT), rtol=1e-12)
    for a in names:
        for b in names:
            np.testing.assert_allclose(hessian[a][b], _hessian_block(CASES[text], a, b),
                                       rtol=1e-9, atol=1e-12, err_msg=f"{text} d2/d{a} d{b}")


def test_reported_program_prints_its_hessian():
    """The reported case, by hand: d2/dX dr[i, j, 0, k] = [j == k]; the other blocks are 0."""
    done = CliRunner().invoke(cli, ["diff", "sum(X*r)", "--order", "2", "--json",
                                    "--X", "[[1,2,3],[4,5,6]]", "--r", "[[1,2,3]]"])
    assert done.exit_code == 0, done.output
    blocks = json.loads(done.stdout)["derivatives"]
    cross = np.zeros((2, 3, 1, 3))
    for i in range(2):
        for j in range(3):
            cross[i, j, 0, j] = 1.0
    np.testing.assert_array_equal(_evaluated(blocks["X"]["r"]), cross)
    np.testing.assert_array_equal(_evaluated(blocks["r"]["X"]), cross.transpose(2, 3, 0, 1))
    assert float(_evaluated(blocks["X"]["X"])) == 0.0
    assert float(_evaluated(blocks["r"]["r"])) == 0.0


def test_a_form_whose_shapes_do_not_fit_names_no_internal_expression(monkeypatch):
    """Shapes that go wrong inside a derivative form: one line, exit 2, no ``#-1``."""
    from gradcli.symbolic import arrays

    def wrong(b, g, shape):  # every spread of a gradient gets one extra row
        return arrays.op_node(b, "outer", arrays.ones_vector(b, shape[0] + 1),
                              arrays.ones_vector(b, shape[-1])) if shape else g
    monkeypatch.setattr(arrays, "spread", wrong)
    done = CliRunner().invoke(cli, ["diff", "sum(X*r)", "--order", "2",
                                    "--shape", "X=2x3", "--shape", "r=1x3"])
    assert done.exit_code == 2, done.output
    assert "#-1" not in done.output and "Traceback" not in done.output
    assert "derivative form whose shapes do not fit" in done.output

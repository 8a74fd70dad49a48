"""``gradcli diff`` against an independent oracle: HIPS autograd (test-only), several hundred
array programs from a generator with a pinned seed.

Each program is written twice from one random tree: in gradcli's language and as a Python
function on ``autograd.numpy``. For each, ``gradcli diff`` prints the gradient, the Jacobian of
an array output, or (smooth programs) the Hessian; every printed derivative is evaluated at a
random point and compared with autograd's, and every ``--format python`` export is imported,
called and compared the same way. What the bar is (issue 26): no wrong derivative at exit
status 0, no traceback, every export runs. A derivative that ``diff``'s own check refuses
(exit 1) or that has no vectorized form (exit 2, one line) is allowed but counted, and the
counts are bounded.

The CI variant runs ``PROGRAMS`` programs; ``-m slow`` runs ``SLOW_PROGRAMS``.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
special = pytest.importorskip("autograd.scipy.special")

# autograd's own warnings (its sqrt VJP at 0, a gradient of a program that ignores a variable)
pytestmark = [pytest.mark.filterwarnings("ignore:Output seems independent of input"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning:autograd")]
SEED = 26
PROGRAMS = 240  # per kind in CI: gradients; a third as many Jacobians and Hessians
SLOW_PROGRAMS = 1200
N, M = 3, 2  # x, y: vectors of N; W: M x N; A: N x N; s: a number
SHAPES = {"x": (N,), "y": (N,), "W": (M, N), "A": (N, N), "s": ()}
RTOL, ATOL = 1e-6, 1e-8


@dataclass(frozen=True)
class Expr:
    text: str  # gradcli's language
    fn: Callable[[dict], object]  # the same on autograd.numpy
    shape: tuple[int, ...]
    smooth: bool = True  # twice differentiable everywhere (Hessians are compared)
    atom: bool = False  # needs no parentheses as an operand


def wrap(e: Expr) -> str:
    return e.text if e.atom else f"({e.text})"


def var(name: str) -> Expr:
    return Expr(name, lambda env: env[name], SHAPES[name], atom=True)


def _softmax(u):
    e = anp.exp(u - anp.max(u))
    return e / anp.sum(e)


UNARY = {  # name: (autograd form, smooth)
    "sin": (anp.sin, True), "cos": (anp.cos, True), "tanh": (anp.tanh, True),
    "exp": (anp.exp, True), "sigmoid": (lambda u: 1 / (1 + anp.exp(-u)), True),
    "softplus": (lambda u: anp.logaddexp(0.0, u), True), "abs": (anp.abs, False),
    "relu": (lambda u: anp.maximum(u, 0.0), False), "atan": (anp.arctan, True),
    "erf": (special.erf, True), "square": (lambda u: u**2, True),
    "log1p": (None, True),  # written log1p(u**2): defined everywhere
}


def unary(rng: random.Random, e: Expr) -> Expr:
    name = rng.choice(sorted(UNARY))
    form, smooth = UNARY[name]
    if name == "log1p":
        return Expr(f"log1p({wrap(e)}**2)", lambda env: anp.log1p(e.fn(env) ** 2), e.shape,
                    e.smooth, atom=True)
    return Expr(f"{name}({e.text})", lambda env: form(e.fn(env)), e.shape,
                e.smooth and smooth, atom=True)


def binary(op: str, a: Expr, b: Expr) -> Expr:
    forms = {"+": lambda u, v: u + v, "-": lambda u, v: u - v, "*": lambda u, v: u * v}
    shape = np.broadcast_shapes(a.shape, b.shape)
    right = wrap(b) if op != "+" else b.text
    left = a.text if op in "+-" else wrap(a)
    return Expr(f"{left} {op} {right}", lambda env: forms[op](a.fn(env), b.fn(env)), shape,
                a.smooth and b.smooth)


def of_shape(rng: random.Random, shape: tuple[int, ...], depth: int) -> Expr:
    """A random expression of ``shape``: leaves, element-wise functions, broadcasting sums and
    products, matrix products, reductions, indexing."""
    leaves = {(): ["s"], (N,): ["x", "y"], (M, N): ["W"], (N, N): ["A"]}[shape]
    if depth <= 0 or rng.random() < 0.2:
        return var(rng.choice(leaves))
    pick = rng.random()
    if pick < 0.25:
        return unary(rng, of_shape(rng, shape, depth - 1))
    if pick < 0.55:
        other = shape if rng.random() < 0.6 else ()
        parts = [of_shape(rng, shape, depth - 1), of_shape(rng, other, depth - 1)]
        rng.shuffle(parts)
        return binary(rng.choice("+-*"), *parts)
    return _structural(rng, shape, depth)


def _structural(rng: random.Random, shape: tuple[int, ...], depth: int) -> Expr:
    if shape == ():
        return reduction(rng, depth)
    if shape == (N,):
        choice = rng.randrange(4)
        if choice == 0:
            a, u = of_shape(rng, (N, N), depth - 1), of_shape(rng, (N,), depth - 1)
            return Expr(f"{wrap(a)}@{wrap(u)}", lambda env: anp.dot(a.fn(env), u.fn(env)),
                        (N,), a.smooth and u.smooth)
        if choice == 1:
            w, v = of_shape(rng, (M, N), depth - 1), var("x")
            return Expr(f"{wrap(w)}'@({wrap(w)}@{v.text})",
                        lambda env: anp.dot(w.fn(env).T, anp.dot(w.fn(env), env["x"])),
                        (N,), w.smooth)
        if choice == 2:
            u = of_shape(rng, (N,), depth - 1)
            return Expr(f"softmax({u.text})", lambda env: _softmax(u.fn(env)), (N,), u.smooth,
                        atom=True)
        w = of_shape(rng, (M, N), depth - 1)
        return Expr(f"{wrap(w)}[0]", lambda env: w.fn(env)[0], (N,), w.smooth, atom=True)
    if shape == (M, N):
        if rng.random() < 0.5:
            w, u = of_shape(rng, (M, N), depth - 1), of_shape(rng, (N,), depth - 1)
            return binary(rng.choice("+-*"), w, u)  # a row broadcast over the matrix
        w, a = of_shape(rng, (M, N), depth - 1), of_shape(rng, (N, N), depth - 1)
        return Expr(f"{wrap(w)}@{wrap(a)}", lambda env: anp.dot(w.fn(env), a.fn(env)), (M, N),
                    w.smooth and a.smooth)
    a = of_shape(rng, (N, N), depth - 1)
    if rng.random() < 0.5:
        return Expr(f"{wrap(a)}'", lambda env: a.fn(env).T, (N, N), a.smooth, atom=True)
    u, v = of_shape(rng, (N,), depth - 1), of_shape(rng, (N,), depth - 1)
    return Expr(f"outer({u.text}, {v.text})", lambda env: anp.outer(u.fn(env), v.fn(env)),
                (N, N), u.smooth and v.smooth, atom=True)


REDUCTIONS = {  # name: (autograd form, smooth, operand shapes)
    "sum": (anp.sum, True, [(N,), (M, N), (N, N)]),
    "mean": (anp.mean, True, [(N,), (M, N)]),
    "logsumexp": (special.logsumexp, True, [(N,)]),
    "norm": (lambda u: anp.sqrt(anp.sum(u * u)), True, [(N,)]),
    "max": (anp.max, False, [(N,)]),
    "tr": (anp.trace, True, [(N, N)]),
    "prod": (anp.prod, True, [(N,)]),
}


def reduction(rng: random.Random, depth: int) -> Expr:
    if rng.random() < 0.2:
        u, v = of_shape(rng, (N,), depth - 1), of_shape(rng, (N,), depth - 1)
        return Expr(f"dot({u.text}, {v.text})", lambda env: anp.sum(u.fn(env) * v.fn(env)), (),
                    u.smooth and v.smooth, atom=True)
    if rng.random() < 0.15:
        u = of_shape(rng, (N,), depth - 1)
        k = rng.randrange(N)
        return Expr(f"{wrap(u)}[{k}]", lambda env: u.fn(env)[k], (), u.smooth, atom=True)
    name = rng.choice(sorted(REDUCTIONS))
    form, smooth, shapes = REDUCTIONS[name]
    u = of_shape(rng, rng.choice(shapes), depth - 1)
    return Expr(f"{name}({u.text})", lambda env: form(u.fn(env)), (), u.smooth and smooth,
                atom=True)


EDGE_CASES = [  # the list, and the Matrix Cookbook identities
    "sum(x - x + y)", "sum(x*0 + y)", "sum((W@A - W@A)@x)", "max(x - x) + sum(x)",
    "(x - x)[0] + sum(x)", "tr(A - A) + sum(A)", "logsumexp(x - x) + sum(x)",
    "sum(abs(x)*x)", "sum(W@A + x)", "mean(W - s)", "sum(s + x)", "sum(x/x + y)",
    "sum(x**0*y)", "sum(exp(x - x)*y)", "x'@A@x", "y'@W'@W@x", "tr(A@A@A)", "logdet(A'@A)",
    "det(A)", "y'@inv(A)@x", "norm(W)**2", "tr(W'@W@A)", "sum((W@x - s)**2) + W[0]@x",
    "sum(relu(W@x)*W[1][0:2])", "prod(x*y)", "-sum(softmax(x)*log(softmax(y)))",
]


def _program(rng: random.Random) -> Expr:
    return of_shape(rng, (), rng.randrange(2, 5))


def _point(rng: np.random.Generator, names) -> dict[str, np.ndarray]:
    point = {}
    for name in names:
        value = rng.uniform(0.5, 1.5, size=SHAPES[name])
        if name == "A":
            value = value + N * np.eye(N)
        point[name] = np.asarray(value, dtype=float)
    return point


def _shape_args(names) -> list[str]:
    return [arg for name in names
            for arg in ("--shape", f"{name}={'x'.join(map(str, SHAPES[name])) or 'scalar'}")]


def _names(text: str) -> list[str]:
    return list(gradcli.parse(text).variables)


def _diff(args: list[str]):
    done = CliRunner().invoke(cli, ["diff", *args])
    assert done.exception is None or isinstance(done.exception, SystemExit), (
        args, repr(done.exception))
    assert "Traceback" not in done.output, (args, done.output)
    assert done.exit_code in (0, 1, 2), (args, done.output)
    return done


def _evaluated(text: str, point: dict) -> np.ndarray:
    program = gradcli.parse(text)
    return np.asarray(gradcli.evaluate(program, {n: point[n] for n in program.variables},
                                       check=False).value, dtype=float)


def _close(got, expected, what) -> None:
    got = np.asarray(got, dtype=float)
    expected = np.asarray(expected, dtype=float)
    if got.shape != expected.shape and got.ndim == 0:
        got = np.broadcast_to(got, expected.shape)
    assert got.shape == expected.shape, what
    known = np.isfinite(expected)  # autograd's prod divides by the element: NaN at a zero
    got, expected = got[known], expected[known]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL * max(1.0, np.max(
        np.abs(expected), initial=0.0)), err_msg=what)


def _imported(source: str, tmp_path):
    path = tmp_path / "exported_oracle.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("exported_oracle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Tally:
    def __init__(self) -> None:
        self.status: dict[int, int] = {0: 0, 1: 0, 2: 0}
        self.refused: list[str] = []

    def saw(self, done, text: str) -> bool:
        self.status[done.exit_code] += 1
        if done.exit_code:
            self.refused.append(f"{done.exit_code} {text}: {done.output.splitlines()[0]}")
        return done.exit_code == 0


def _gradient_case(expr_text: str, fn, rng, tmp_path, tally: Tally) -> None:
    names = _names(expr_text)
    point = _point(rng, names)
    truth = {n: autograd.grad(lambda v, n=n: fn({**point, n: v}))(point[n]) for n in names}
    done = _diff([expr_text, *_shape_args(names), "--json"])
    if tally.saw(done, expr_text):
        for name, text in json.loads(done.stdout)["derivatives"].items():
            _close(_evaluated(text, point), truth[name], f"{expr_text} d/d{name} = {text}")
    done = _diff([expr_text, *_shape_args(names), "--format", "python"])
    if tally.saw(done, expr_text + " (python)"):
        value, grads = _imported(done.stdout, tmp_path).f(*(point[n] for n in names))
        _close(value, fn(point), f"{expr_text} value (python)")
        for name in names:
            assert np.shape(grads[name]) == SHAPES[name], (expr_text, name)
            _close(grads[name], truth[name], f"{expr_text} d/d{name} (python)")


def _hessian_case(expr: Expr, rng, tally: Tally) -> None:
    names = _names(expr.text)
    point = _point(rng, names)
    done = _diff([expr.text, *_shape_args(names), "--order", "2", "--json"])
    if not tally.saw(done, expr.text + " (order 2)"):
        return
    blocks = json.loads(done.stdout)["derivatives"]
    for a in names:
        for b in names:
            def grad_a(vb, a=a, b=b):
                env = {**point, b: vb}
                return autograd.grad(lambda va: expr.fn({**env, a: va}))(env[a])
            truth = autograd.jacobian(grad_a)(point[b])
            _close(_evaluated(blocks[a][b], point), truth,
                   f"{expr.text} d2/d{a} d{b} = {blocks[a][b]}")


def _jacobian_case(expr: Expr, rng, tally: Tally) -> None:
    names = _names(expr.text)
    point = _point(rng, names)
    done = _diff([expr.text, *_shape_args(names), "--json"])
    if not tally.saw(done, expr.text + " (jacobian)"):
        return
    (row,) = json.loads(done.stdout)["jacobian"].values()
    for name, text in row.items():
        truth = autograd.jacobian(lambda v, n=name: expr.fn({**point, n: v}))(point[name])
        _close(_evaluated(text, point), truth, f"{expr.text} J d/d{name} = {text}")


def _run(count: int, tmp_path) -> Tally:
    rng = random.Random(SEED)
    values = np.random.default_rng(SEED)
    tally = Tally()
    for text in EDGE_CASES:
        fn = _cookbook(text)
        _gradient_case(text, fn, values, tmp_path, tally)
    for _ in range(count):
        expr = _program(rng)
        _gradient_case(expr.text, expr.fn, values, tmp_path, tally)
    for _ in range(count // 3):
        expr = _program(rng)
        if expr.smooth:
            _hessian_case(expr, values, tally)
        vector = of_shape(rng, (N,), rng.randrange(1, 4))
        _jacobian_case(vector, values, tally)
    return tally


def _cookbook(text: str) -> Callable[[dict], object]:
    """The edge cases on autograd.numpy: gradcli's syntax rewritten to NumPy's (a small fixed
    list, so a table of replacements is enough)."""
    calls = {"tr": "anp.trace", "logdet": "_logdet", "det": "anp.linalg.det",
             "inv": "anp.linalg.inv", "norm": "_norm", "logsumexp": "special.logsumexp",
             "softmax": "_softmax", "relu": "_relu", "max": "anp.max", "mean": "anp.mean",
             "prod": "anp.prod", "sum": "anp.sum", "exp": "anp.exp", "log": "anp.log",
             "abs": "anp.abs"}
    replaced = re.sub(r"(?<![\w.])(\w+)\(", lambda m: calls.get(m[1], m[1]) + "(",
                      text.replace("'@", ".T@"))
    helpers = {"anp": anp, "special": special, "_softmax": _softmax,
               "_logdet": lambda a: anp.log(anp.linalg.det(a)),
               "_norm": lambda u: anp.sqrt(anp.sum(u * u)),
               "_relu": lambda u: anp.maximum(u, 0.0)}
    code = compile(replaced, "<edge case>", "eval")  # the test's own fixed list
    return lambda env: eval(code, {**helpers, **env})


def _assert_bounded(tally: Tally, total: int) -> None:
    refused = tally.status[1] + tally.status[2]
    assert tally.status[1] == 0, "\n".join(tally.refused)  # diff's check found a wrong form
    assert refused <= total // 20, "\n".join(tally.refused)


def test_diff_agrees_with_autograd_on_generated_programs(tmp_path):
    tally = _run(PROGRAMS, tmp_path)
    _assert_bounded(tally, sum(tally.status.values()))


@pytest.mark.slow
def test_diff_agrees_with_autograd_on_many_generated_programs(tmp_path):
    tally = _run(SLOW_PROGRAMS, tmp_path)
    _assert_bounded(tally, sum(tally.status.values()))

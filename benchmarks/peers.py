"""The peers, each doing the same work as gradcli the way its users would write it.

Every factory returns None when its library is not installed (``pip install -e '.[bench]'``),
so the benchmark runs with whatever is there. The programs are the generated benchmark text,
trusted, read with Python's ``eval``/``exec`` as these libraries' users do; gradcli never does.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

# Peers too slow for 10,000 programs run on this many and are scaled.
BATCH_SAMPLE = {"SymPy (sympify, diff, evalf)": 20, "HIPS autograd": 1000}


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# --- W2: many small programs -------------------------------------------------------------------

def micrograd_batch() -> Callable | None:
    if not _have("micrograd"):
        return None
    from micrograd.engine import Value

    helpers = {"relu": lambda a: a.relu(), "__builtins__": {}}

    def run(programs: list[str], point: dict[str, float]) -> None:
        for text in programs:
            names = {name: Value(value) for name, value in point.items()}
            out = eval(text, helpers, names)
            out.backward()

    return run


def torch_batch() -> Callable | None:
    if not _have("torch"):
        return None
    import torch

    helpers = {"relu": torch.relu, "__builtins__": {}}

    def run(programs: list[str], point: dict[str, float]) -> None:
        for text in programs:
            names = _torch_inputs(point)
            out = eval(text, helpers, names)
            out.backward()
            [t.grad for t in names.values()]

    return run


def autograd_batch() -> Callable | None:
    if not _have("autograd"):
        return None
    import autograd
    import autograd.numpy as anp

    helpers = {"relu": lambda a: anp.maximum(a, 0.0), "__builtins__": {}}

    def run(programs: list[str], point: dict[str, float]) -> None:
        names = list(point)
        start = anp.array([point[n] for n in names])
        for text in programs:
            code = compile(text, "<program>", "eval")

            def f(values, code=code):
                return eval(code, helpers, dict(zip(names, values, strict=True)))

            autograd.value_and_grad(f)(start)

    return run


def sympy_batch() -> Callable | None:
    if not _have("sympy"):
        return None
    import sympy

    def run(programs: list[str], point: dict[str, float]) -> None:
        symbols = {n: sympy.Symbol(n) for n in point}
        names = {**symbols, "relu": lambda a: sympy.Max(a, 0)}
        at = {symbols[n]: v for n, v in point.items()}
        for text in programs:
            expr = sympy.sympify(text, locals=names)
            float(expr.evalf(subs=at))
            used = expr.free_symbols
            [float(sympy.diff(expr, s).evalf(subs=at)) for s in symbols.values() if s in used]

    return run


def _with_check(make_inputs: Callable, helpers: dict[str, Any], backward: Callable) -> Callable:
    """A peer doing what ``gradcli eval - --json`` does for each program: value and gradients,
    a central-difference check of every input gradient (plain floats, the program compiled
    once), and one JSON line -- the code a user would add to get the same guarantees."""
    import json

    float_helpers = {"relu": lambda a: max(a, 0.0), "__builtins__": {}}

    def run(programs: list[str], point: dict[str, float]) -> None:
        for text in programs:
            code = compile(text, "<program>", "eval")
            names = make_inputs(point)
            out = eval(code, helpers, names)  # trusted benchmark text
            grads = backward(out, names)
            checks = {}
            for name, analytic in grads.items():
                h = 6.055454452393343e-06 * max(1.0, abs(point[name]))
                up = eval(code, float_helpers, {**point, name: point[name] + h})
                down = eval(code, float_helpers, {**point, name: point[name] - h})
                numeric = (up - down) / (2 * h)
                checks[name] = abs(numeric - analytic) <= 1e-8 + 1e-5 * abs(numeric)
            json.dumps({"value": float(out.data if hasattr(out, "data") else out),
                        "gradients": grads, "check": checks})

    return run


def micrograd_checked() -> Callable | None:
    if not _have("micrograd"):
        return None
    from micrograd.engine import Value

    def backward(out: Any, names: dict[str, Any]) -> dict[str, float]:
        out.backward()
        return {n: float(v.grad) for n, v in names.items()}

    return _with_check(lambda p: {n: Value(v) for n, v in p.items()},
                       {"relu": lambda a: a.relu(), "__builtins__": {}}, backward)


def _torch_inputs(point: dict[str, float], requires_grad: bool = True) -> dict[str, Any]:
    """One float64 scalar tensor per variable."""
    import torch

    return {n: torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad)
            for n, v in point.items()}


def torch_checked() -> Callable | None:
    if not _have("torch"):
        return None

    import torch

    def backward(out: Any, names: dict[str, Any]) -> dict[str, float]:
        out.backward()
        return {n: 0.0 if t.grad is None else t.grad.item() for n, t in names.items()}

    return _with_check(_torch_inputs, {"relu": torch.relu, "__builtins__": {}}, backward)


BATCH: dict[str, Callable[[], Callable | None]] = {
    "micrograd + eval": micrograd_batch,
    "micrograd + eval + FD check + JSON": micrograd_checked,
    "PyTorch (eager, float64)": torch_batch,
    "PyTorch + FD check + JSON": torch_checked,
    "HIPS autograd": autograd_batch,
    "SymPy (sympify, diff, evalf)": sympy_batch,
}


# --- W3: one wide program, gradient and a finite-difference check of every input ----------------

def _median_time(action: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _wide_runner(
    make_inputs: Callable[[dict[str, float]], dict[str, Any]],
    helpers: dict[str, Any],
    backward: Callable[[Any, dict[str, Any]], None],
    plain_inputs: Callable[[dict[str, float]], dict[str, Any]],
) -> Callable[[str, dict[str, float]], tuple[float, int | None, str]]:
    """Time the gradient (traced forward + backward) and a forward pass with the library's own
    untraced values, as its gradient checks do; the check's 2 forwards per input are
    extrapolated from that (running 200 would take minutes). The note also gives the forward
    with plain Python floats, the fastest way to write such a check by hand."""

    def evaluate(body: Any, terms: list[str], names: dict[str, Any]) -> Any:
        exec(body, helpers, names)  # trusted benchmark text
        total = names[terms[0]]
        for term in terms[1:]:  # summed here: Python's compiler nests a long sum too deeply
            total = total + names[term]
        return total

    def run(text: str, point: dict[str, float]) -> tuple[float, int | None, str]:
        start = time.perf_counter()
        *statements, output = text.split("\n")
        body = compile("\n".join(statements), "<program>", "exec")  # once, as a user would
        terms = output.split(" + ")
        names = make_inputs(point)
        out = evaluate(body, terms, names)
        backward(out, names)
        traced = time.perf_counter() - start
        del out, names
        forward = _median_time(lambda: evaluate(body, terms, plain_inputs(point)))
        floats = _median_time(lambda: evaluate(body, terms, dict(point)))
        total = traced + 2 * len(point) * forward
        note = (f"gradient {traced:.1f} s + {2 * len(point)} forwards of {forward:.3f} s "
                f"(extrapolated; with Python floats instead: {floats:.3f} s each)")
        return total, None, note

    return run


def micrograd_wide() -> Callable | None:
    if not _have("micrograd"):
        return None
    import sys

    from micrograd.engine import Value

    def backward(out: Any, names: dict[str, Any]) -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(1_000_000)  # micrograd's topological sort is recursive
        try:
            out.backward()
        finally:
            sys.setrecursionlimit(limit)

    def values(point: dict[str, float]) -> dict[str, Any]:
        return {n: Value(v) for n, v in point.items()}

    return _wide_runner(values, {"__builtins__": {}}, backward, values)


def torch_wide() -> Callable | None:
    if not _have("torch"):
        return None

    def plain(point: dict[str, float]) -> dict[str, Any]:
        return _torch_inputs(point, requires_grad=False)

    return _wide_runner(_torch_inputs, {"__builtins__": {}}, lambda out, names: out.backward(),
                        plain)


def autograd_wide() -> Callable | None:
    if not _have("autograd"):
        return None
    import autograd.numpy as anp
    from autograd import value_and_grad

    def run(text: str, point: dict[str, float]) -> tuple[float, int | None, str]:
        names = list(point)
        *statements, output = text.split("\n")
        body = compile("\n".join(statements), "<program>", "exec")
        terms = output.split(" + ")

        def f(values: Any) -> Any:
            scope = {n: values[i] for i, n in enumerate(names)}
            exec(body, {"__builtins__": {}}, scope)
            total = scope[terms[0]]
            for term in terms[1:]:
                total = total + scope[term]
            return total

        start_values = anp.array([point[n] for n in names])
        start = time.perf_counter()
        value_and_grad(f)(start_values)
        traced = time.perf_counter() - start
        forward = _median_time(lambda: f(start_values))  # check_grads' forwards: plain NumPy
        total = traced + 2 * len(point) * forward
        note = (f"gradient {traced:.1f} s + {2 * len(point)} forwards of {forward:.3f} s "
                f"(extrapolated)")
        return total, None, note

    return run


WIDE: dict[str, Callable[[], Any]] = {
    "micrograd + exec": micrograd_wide,
    "PyTorch (eager, float64)": torch_wide,
    "HIPS autograd": autograd_wide,
}


# --- W4: deep nesting ----------------------------------------------------------------------------

def micrograd_deep() -> Callable | None:
    if not _have("micrograd"):
        return None
    from micrograd.engine import Value

    def run(text: str) -> None:
        out = eval(text, {"__builtins__": {}}, {"x": Value(0.3)})
        out.backward()

    return run


def sympy_deep() -> Callable | None:
    if not _have("sympy"):
        return None
    import sympy

    def run(text: str) -> None:
        x = sympy.Symbol("x")
        expr = sympy.sympify(text, locals={"x": x})
        float(sympy.diff(expr, x).subs(x, 0.3))

    return run


DEEP: dict[str, Callable[[], Callable | None]] = {
    "micrograd + eval": micrograd_deep,
    "SymPy": sympy_deep,
}


# --- W5: value and gradient at 10^6 points ---------------------------------------------

def sweep_by_hand(np: Any, x: Any, y: Any) -> tuple[Any, Any, Any]:
    """sin(x)*exp(-y**2) + log(1+x**2*y**2) and its gradient, written out by hand."""
    s, c, g = np.sin(x), np.cos(x), np.exp(-y * y)
    q = 1.0 + x * x * y * y
    value = s * g + np.log(q)
    dx = c * g + 2.0 * x * y * y / q
    dy = -2.0 * y * s * g + 2.0 * x * x * y / q
    return value, dx, dy


def torch_sweep() -> Callable | None:
    if not _have("torch"):
        return None
    import torch

    def run(x: Any, y: Any) -> None:
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.tensor(y, requires_grad=True)
        out = torch.sin(tx) * torch.exp(-ty**2) + torch.log(1 + tx**2 * ty**2)
        out.sum().backward()

    return run


def autograd_sweep() -> Callable | None:
    if not _have("autograd"):
        return None
    import autograd.numpy as anp
    from autograd import elementwise_grad

    def f(x: Any, y: Any) -> Any:
        return anp.sin(x) * anp.exp(-y**2) + anp.log(1 + x**2 * y**2)

    dx, dy = elementwise_grad(f, 0), elementwise_grad(f, 1)

    def run(x: Any, y: Any) -> None:
        f(x, y), dx(x, y), dy(x, y)

    return run


SWEEP: dict[str, Callable[[], Callable | None]] = {
    "PyTorch (float64)": torch_sweep,
    "HIPS autograd (elementwise_grad)": autograd_sweep,
}


# --- arrays (issue 16): value and every input's gradient ------------------------------------------

def batch_loss_by_hand(np: Any, W: Any, x: Any, b: Any, t: Any) -> tuple:  # noqa: N803
    """mean((W@x + b - t)**2) and its gradients in W, x, b, t, as one writes them in NumPy."""
    residual = W @ x + b - t
    g = 2.0 * residual / residual.size
    return np.mean(residual**2), np.outer(g, x), W.T @ g, g, -g


def cross_entropy_by_hand(np: Any, z: Any, y: Any) -> tuple:
    """-sum(y*log_softmax(z)) and its gradients in z and y, the max subtracted."""
    shifted = z - z.max()
    log_softmax = shifted - np.log(np.sum(np.exp(shifted)))
    return -np.sum(y * log_softmax), np.exp(log_softmax) * np.sum(y) - y, -log_softmax


def array_peers(name: str, values: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """PyTorch and JAX (CPU, no jit) on the same array workload, when installed."""
    peers: dict[str, Callable[[], object]] = {}
    if _have("torch"):
        import torch

        def by_torch() -> object:
            inputs = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
            out = _TORCH_FORMULAS[name](torch, **inputs)
            out.backward()
            return [t.grad for t in inputs.values()]

        peers["PyTorch (CPU)"] = by_torch
    if _have("jax"):
        import jax
        import jax.numpy as jnp

        gradient = jax.value_and_grad(lambda v: _JAX_FORMULAS[name](jnp, **v))
        peers["JAX (CPU, no jit)"] = lambda: jax.block_until_ready(gradient(values))
    return peers


_TORCH_FORMULAS = {
    "batch_loss": lambda torch, W, x, b, t: torch.mean((W @ x + b - t) ** 2),  # noqa: N803
    "cross_entropy": lambda torch, z, y: -torch.sum(y * torch.log_softmax(z, dim=-1)),
}
_JAX_FORMULAS = {
    "batch_loss": lambda jnp, W, x, b, t: jnp.mean((W @ x + b - t) ** 2),  # noqa: N803
    "cross_entropy": lambda jnp, z, y: -jnp.sum(y * (z - jax_logsumexp(jnp, z))),
}


def jax_logsumexp(jnp: Any, z: Any) -> Any:
    top = jnp.max(z)
    return top + jnp.log(jnp.sum(jnp.exp(z - top)))


def jacobian_by_hand(np: Any, x: Any) -> Any:
    """J1's Jacobian written out: diag((1 - tanh^2) s) + tanh (diag(s) - s s') + diag(x)."""
    s = np.exp(x - x.max())
    s /= s.sum()
    y = np.tanh(x)
    jac = y[:, None] * (np.diag(s) - np.outer(s, s))
    jac[np.diag_indices(len(x))] += (1 - y * y) * s + x
    return y * s + x * x / 2, jac


def jacobian_peers(x: Any) -> dict[str, Callable[[], object]]:
    """J1 by ``jax.jacrev`` (CPU, no jit) and ``torch.autograd.functional.jacobian``, when
    installed: the value and the 100x100 Jacobian."""
    found: dict[str, Callable[[], object]] = {}
    if _have("jax"):
        import jax
        import jax.numpy as jnp

        def f(v: Any) -> Any:
            return jnp.tanh(v) * jax.nn.softmax(v) + v**2 / 2

        jacobian = jax.jacrev(f)
        found["jax.jacrev (CPU, no jit)"] = lambda: jax.block_until_ready(jacobian(x))
        forward = jax.jacfwd(f)
        found["jax.jacfwd (CPU, no jit)"] = lambda: jax.block_until_ready(forward(x))
    if _have("torch"):
        import torch

        t = torch.tensor(x)

        def g(v: Any) -> Any:
            return torch.tanh(v) * torch.softmax(v, dim=-1) + v**2 / 2

        found["torch.autograd.functional.jacobian"] = (
            lambda: torch.autograd.functional.jacobian(g, t))
    return found

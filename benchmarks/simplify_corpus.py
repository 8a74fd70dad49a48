"""How short and how fast gradcli's derivatives are, against SymPy's ``diff`` (issue 14).

The corpus: 1,000 programs of the W2 generator (``workloads.batch_programs``), the table of
issue 14 and every program of ``examples/``. For each program and variable, the size of
gradcli's printed derivative is compared with the size of SymPy's ``diff`` result, both counted
the same way: the printed text parsed by SymPy with ``evaluate=False`` (every function an
undefined function, so ``log2`` and ``Heaviside`` each count 1) and ``count_ops``; gradcli's
statements (``t1 = ...``) count once each, the names that use them count 0. Times are medians
per derivative: SymPy's ``diff`` alone (its parsing not counted), gradcli's ``differentiate``
plus printing, both from a parsed program. gradcli pauses Python's cycle collector while it
works (``derivatives.collector_paused``) and collects when it ends; the result it returns (a
builder and its nodes, a reference cycle) dies after that, and collecting it is timed too.

    python benchmarks/simplify_corpus.py            # 1,000 programs, orders 1 and 2: minutes
    python benchmarks/simplify_corpus.py --count 100 --orders 1
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import sympy as sp
from sympy.parsing.sympy_parser import parse_expr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import batch_programs  # noqa: E402

from gradcli.api import differentiate  # noqa: E402
from gradcli.engine.graph import Program  # noqa: E402
from gradcli.errors import GradcliError  # noqa: E402
from gradcli.language.parser import parse  # noqa: E402

TABLE = ["x**x", "sin(x)**2+cos(x)**2", "log(x**2)", "atan2(y,x)", "x/(y-2)**3", "log2(x)",
         "(x*W+b-t)**2", "x**3*y**2"]

# gradcli's functions as SymPy expressions: what a SymPy user would write for each.
_SYMPY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "neg": lambda a: -a, "pow": lambda a, b: a**b,
    "exp": sp.exp, "log": sp.log, "log2": lambda a: sp.log(a, 2),
    "log10": lambda a: sp.log(a, 10), "sqrt": sp.sqrt, "sin": sp.sin, "cos": sp.cos,
    "tan": sp.tan, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2,
    "hypot": lambda a, b: sp.sqrt(a**2 + b**2), "sinh": sp.sinh, "cosh": sp.cosh,
    "tanh": sp.tanh, "sigmoid": lambda a: 1 / (1 + sp.exp(-a)),
    "relu": lambda a: sp.Max(a, 0), "softplus": lambda a: sp.log(1 + sp.exp(a)),
    "abs": sp.Abs, "sign": sp.sign, "heaviside": lambda a: sp.Heaviside(a, 0),
    "min": sp.Min, "max": sp.Max,
}


def to_sympy(program: Program) -> sp.Expr:
    """The program as a SymPy expression, built node by node (no text, no eval)."""
    made: dict[int, sp.Expr] = {}
    for node in program.nodes:
        if node.op.name == "var":
            made[id(node)] = sp.Symbol(str(node.name), real=True)
        elif node.op.name == "const":
            made[id(node)] = {"pi": sp.pi, "e": sp.E}.get(str(node.name), _number(node.value))
        else:
            made[id(node)] = _SYMPY[node.op.name](*(made[id(s)] for s in node.inputs))
    return made[id(program.output)]


def _number(value: float) -> sp.Expr:
    return sp.Integer(int(value)) if value == int(value) else sp.Float(value)


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def size(text: str) -> int:
    """Operations in a printed program: each ``name = expr`` statement and the final expression
    parsed by SymPy without evaluating, counted by ``count_ops``."""
    total = 0
    for part in text.split(";"):
        expression = part.split("=", 1)[1] if re.match(r"\s*\w+\s*=[^=]", part) else part
        total += int(sp.count_ops(_parse(expression)))
    return total


def _parse(text: str) -> sp.Expr:
    """``text`` as an unevaluated SymPy expression: names followed by ``(`` are undefined
    functions (each call counts one operation), the others symbols."""
    names: dict[str, object] = {}
    for name in set(_NAME.findall(text)):
        called = re.search(rf"\b{name}\s*\(", text)
        names[name] = sp.Function(name) if called else sp.Symbol(name)
    return parse_expr(text, local_dict=names, evaluate=False)


def median_seconds(action: Callable[[], object], budget: float = 0.02) -> float:
    """Median time of ``action``, repeated for about ``budget`` seconds (at least 3 runs)."""
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < 50):
        begin = time.perf_counter()
        action()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def examples() -> list[str]:
    """The programs of examples/*.grad and examples/formulas.txt (the lines that parse)."""
    folder = HERE.parent / "examples"
    programs = [path.read_text() for path in sorted(folder.glob("*.grad"))]
    lines = (folder / "formulas.txt").read_text().splitlines()
    programs += [line for line in lines if line.strip() and not line.startswith("#")]
    return programs


def measure(text: str, order: int) -> list[dict]:
    """One record per derivative of ``text`` of ``order`` (all mixed entries at order 2)."""
    try:
        program = parse(text)
        result = differentiate(program, order=order)
    except GradcliError:
        return []
    names = result.wrt
    ours = median_seconds(lambda: _printed_and_collected(program, order))
    ours /= len(names) ** order
    expression = to_sympy(program)
    symbols = {n: sp.Symbol(n, real=True) for n in names}
    records = []
    texts = result.texts()
    for path in _paths(names, order):
        ours_text = texts
        for name in path:
            ours_text = ours_text[name]
        wrt = [symbols[n] for n in path]
        begin = time.perf_counter()  # SymPy caches results: only its first call is timed
        theirs = sp.diff(expression, *wrt)
        seconds = time.perf_counter() - begin
        records.append({"program": text, "wrt": path, "ours": size(ours_text),
                        "sympy": size(str(theirs)), "ours_s": ours, "sympy_s": seconds,
                        "text": ours_text, "sympy_text": str(theirs)})
    return records


def _printed_and_collected(program: Program, order: int) -> None:
    differentiate(program, order=order).texts()
    gc.collect(0)  # the result just dropped: a builder and its nodes, which only a collection frees


def _paths(names: list[str], order: int) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = [()]
    for _ in range(order):
        paths = [(*p, n) for p in paths for n in names]
    return paths


def summary(records: list[dict], order: int) -> str:
    """A Markdown table of the size ratios and the speed-up."""
    ratios = [r["ours"] / max(r["sympy"], 1) for r in records]
    not_larger = sum(r["ours"] <= r["sympy"] for r in records)
    speedups = [r["sympy_s"] / r["ours_s"] for r in records]
    buckets = [("smaller", lambda q: q < 1), ("equal", lambda q: q == 1),
               ("1-1.25x", lambda q: 1 < q <= 1.25), ("1.25-1.5x", lambda q: 1.25 < q <= 1.5),
               ("> 1.5x", lambda q: q > 1.5)]
    lines = [f"order {order}: {len(records):,} derivatives of "
             f"{len({r['program'] for r in records}):,} programs", "",
             "| size vs SymPy | derivatives | share |", "|---|---:|---:|"]
    for label, test in buckets:
        count = sum(test(q) for q in ratios)
        lines.append(f"| {label} | {count:,} | {100 * count / len(records):.1f}% |")
    lines += ["", f"- not larger than SymPy's: {100 * not_larger / len(records):.1f}%; "
              f"largest ratio {max(ratios):.2f}; median ratio {statistics.median(ratios):.2f}",
              f"- operations, median: gradcli {statistics.median(r['ours'] for r in records)}, "
              f"SymPy {statistics.median(r['sympy'] for r in records)}",
              f"- time per derivative, median: gradcli "
              f"{1e6 * statistics.median(r['ours_s'] for r in records):.0f} µs, SymPy diff "
              f"{1e6 * statistics.median(r['sympy_s'] for r in records):.0f} µs; "
              f"median speed-up {statistics.median(speedups):.0f}x "
              f"(slowest 10%: {sorted(speedups)[len(speedups) // 10]:.0f}x)"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="W2 programs (default 1000)")
    parser.add_argument("--orders", default="1,2", help="comma-separated orders")
    parser.add_argument("--worst", type=int, default=0, help="print the N largest ratios")
    args = parser.parse_args()
    corpus = [*TABLE, *examples(), *batch_programs(args.count)]
    for order in (int(o) for o in args.orders.split(",")):
        records = []
        for i, text in enumerate(corpus):
            records += measure(text, order)
            if i % 100 == 0:
                print(f"order {order}: {i}/{len(corpus)}", file=sys.stderr)
        print(summary(records, order))
        print()
        worst = sorted(records, key=lambda r: -r["ours"] / max(r["sympy"], 1))[:args.worst]
        for r in worst:
            print(f"{r['ours']} vs {r['sympy']}  d/{','.join(r['wrt'])}  {r['program'][:80]}\n"
                  f"   ours:  {r['text'][:300]}\n   sympy: {r['sympy_text'][:300]}")


if __name__ == "__main__":
    main()

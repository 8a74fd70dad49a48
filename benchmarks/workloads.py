"""Deterministic workloads for the benchmark (a fixed seed: the same text on every machine).

Programs use only ``+ - * / **`` with small integer exponents and ``relu``, the operations every
peer supports (micrograd's engine has no sin or exp), and keep divisors away from zero
(``a / (1 + b*b)``), so every peer can run exactly the same text.
"""

from __future__ import annotations

import random

SEED = 20261130
NAMES = "xyzwv"

# W1: the seed example, one process (run.py and compare.py run the same command line)
SEED_EXPRESSION = "(x*W+b-t)**2"
SEED_VALUES = ("--x", "2", "--W", "3", "--b", "1", "--t", "8")
# What W1 is measured against: the bare imports of gradcli's dependencies
REFERENCE_IMPORTS = "import click, lark, rich.console, rich.table"


def value_flags(point: dict[str, float]) -> list[str]:
    """``{"x": 0.5}`` -> ``["--x=0.5"]``: a point as gradcli's command line gives it."""
    return [f"--{name}={value}" for name, value in point.items()]


def _expression(rng: random.Random, leaves: list[str], ops: int) -> str:
    """A random expression with exactly ``ops`` operations over ``leaves`` (no recursion)."""
    terms = [rng.choice(leaves) for _ in range(ops + 1)]
    used = 0
    while used < ops:
        kind = rng.random()
        i = rng.randrange(len(terms))
        if kind < 0.1 and used + 2 <= ops:
            # A shift keeps relu off its kink when the operand is exactly 0 (x - x), where the
            # check rightly fails (the function is not differentiable there).
            terms[i] = f"relu({terms[i]} + {rng.randint(100, 999) / 1000})"
            used += 2
        elif kind < 0.2 and used + 1 <= ops:
            terms[i] = f"({terms[i]})**2"
            used += 1
        elif kind < 0.3 and used + 3 <= ops:
            b = rng.choice(leaves)
            terms[i] = f"{terms[i]}/(1 + {b}*{b})"
            used += 3
        elif len(terms) > 1:
            a, b = terms.pop(i), terms.pop(rng.randrange(len(terms)))
            terms.append(f"({a} {rng.choice('+-*')} {b})")
            used += 1
        else:
            terms[i] = f"({terms[i]} * 0.5)"
            used += 1
    out = terms[0]
    for term in terms[1:]:
        out = f"({out} + {term})"
    return out


def batch_programs(count: int = 10_000, seed: int = SEED) -> list[str]:
    """W2: ``count`` one-line programs of 15-40 operations over 2-5 variables."""
    rng = random.Random(seed)
    programs = []
    for _ in range(count):
        leaves = list(NAMES[: rng.randint(2, 5)])
        programs.append(_expression(rng, leaves, rng.randint(15, 40)))
    return programs


def batch_point() -> dict[str, float]:
    """The values W2 gives every program."""
    # Irrational-looking values, so that no relu operand lands exactly on 0 by coincidence.
    return dict(zip(NAMES, (0.4142, 0.7321, 0.5774, 0.8660, 0.2361), strict=True))


def wide_program(nodes: int = 100_000, variables: int = 100, seed: int = SEED) -> str:
    """W3: statements ``tK = ...`` mixing variables and recent temporaries, then their sum.

    Each statement makes 8 nodes (two of them constants) and the output adds every temporary,
    so all ``nodes`` are reachable.
    """
    rng = random.Random(seed)
    names = [f"x{i}" for i in range(variables)]
    statements, temps = [], []
    for k in range(max(1, nodes // 9)):
        pool = names if len(temps) < 2 else names + temps[-8:]
        a, b, c, d = (rng.choice(pool) for _ in range(4))
        statements.append(f"t{k} = {a}*{b}/(1 + {c}*{c}) - {d}*0.25")
        temps.append(f"t{k}")
    terms = names + temps
    statements.append(" + ".join(terms))
    return "\n".join(statements)


def wide_point(variables: int = 100) -> dict[str, float]:
    return {f"x{i}": 0.5 + (i % 7) * 0.1 for i in range(variables)}


def deep_program(levels: int) -> str:
    """W4: ``levels`` nested parentheses around alternating ops on x."""
    inner = "x"
    parts_open, parts_close = [], []
    for k in range(levels):
        parts_open.append("(0.5*" if k % 2 == 0 else "(1 - ")
        parts_close.append(")")
    return "".join(parts_open) + inner + "".join(parts_close)


SWEEP_FORMULA = "sin(x)*exp(-y**2) + log(1+x**2*y**2)"


# --- arrays (issue 16) ---------------------------------------------------------------------------

BATCH_LOSS = "mean((W@x + b - t)**2)"  # the seed example over a batch: W is 1000x1000
CROSS_ENTROPY = "-sum(y*log_softmax(z))"  # softmax cross-entropy: z and y have 10^5 elements
# J1 (issue 17): a Jacobian with 100 outputs and 100 inputs (x has 100 elements)
JACOBIAN = "y = tanh(x); y*softmax(x) + x**2/2"
# J2 (issue 17): gradcli diff of reference identities (Matrix Cookbook 2.4-2.5), with shapes
IDENTITIES = [
    ("a'@x", {"a": (3,), "x": (3,)}), ("x'@A@x", {"A": (3, 3), "x": (3,)}),
    ("a'@X@b", {"a": (3,), "X": (3, 2), "b": (2,)}), ("tr(A@X)", {"A": (3, 3), "X": (3, 3)}),
    ("tr(X'@A@X)", {"A": (3, 3), "X": (3, 2)}), ("tr(A@X@B)", {"A": (2, 3), "X": (3, 2),
                                                             "B": (2, 2)}),
    ("logdet(X)", {"X": (3, 3)}), ("det(X)", {"X": (3, 3)}),
    ("a'@inv(X)@b", {"a": (3,), "X": (3, 3), "b": (3,)}), ("norm(x)", {"x": (3,)}),
    ("norm(X)**2", {"X": (3, 2)}), ("logsumexp(x)", {"x": (3,)}),
    ("sum((W@x + b - t)**2)", {"W": (3, 2), "x": (2,), "b": (3,), "t": (3,)}),
    ("mean((W@x + b - t)**2)", {"W": (1000, 1000), "x": (1000,), "b": (1000,),
                                "t": (1000,)}),
]

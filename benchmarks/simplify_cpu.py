"""CPU time of ``gradcli diff`` over the simplify corpus, this tree against another (issue 14).

One pass is ``differentiate(program, order).texts()`` for every program of
``simplify_corpus.py``'s corpus that differentiates (parsing not counted), timed with
``time.process_time``. Two worker processes -- this tree's ``src`` and ``--before``'s -- take
turns, one pass each per round, so that both meet the same load (a shared machine's load moves
more than the difference measured); the best round and the median of the paired ratios are
printed. ``--before`` is the ``src`` folder of another version, e.g. from
``git archive <commit> src | tar -x -C /tmp/before``:

    python benchmarks/simplify_cpu.py --before /tmp/before/src --count 300 --order 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(count: int, order: int) -> None:
    """Load the corpus, then time one pass per line read from stdin."""
    sys.path.insert(0, str(HERE))
    from simplify_corpus import TABLE, examples
    from workloads import batch_programs

    from gradcli.api import differentiate
    from gradcli.errors import GradcliError
    from gradcli.language.parser import parse

    programs = []
    for text in [*TABLE, *examples(), *batch_programs(count)]:
        try:
            program = parse(text)
            differentiate(program, order=order)
        except GradcliError:
            continue
        programs.append(program)
    print(f"ready {len(programs)}", flush=True)
    for _ in sys.stdin:
        start = time.process_time()
        for program in programs:
            differentiate(program, order=order).texts()
        print(f"{time.process_time() - start:.4f}", flush=True)


def start(source: Path, count: int, order: int) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(source)}
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker", "--count", str(count), "--order", str(order)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
    assert process.stdin is not None and process.stdout is not None
    print(f"{source}: {process.stdout.readline().split()[1]} programs", file=sys.stderr)
    return process


def one_pass(process: subprocess.Popen) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    return float(process.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="the src folder of the version to compare")
    parser.add_argument("--count", type=int, default=300, help="W2 programs (default 300)")
    parser.add_argument("--order", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.count, args.order)
        return
    if args.before is None:
        parser.error("--before is required")
    before = start(args.before, args.count, args.order)
    after = start(HERE.parent / "src", args.count, args.order)
    times: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        times["before"].append(one_pass(before))
        times["after"].append(one_pass(after))
    for process in (before, after):
        process.terminate()
    ratios = [b / a for b, a in zip(times["before"], times["after"], strict=True)]
    print(f"order {args.order}, {args.rounds} rounds, CPU seconds per pass")
    for name, values in times.items():
        print(f"  {name}: best {min(values):.3f}, median {statistics.median(values):.3f}")
    print(f"  speed-up: {min(times['before']) / min(times['after']):.2f} (best rounds), "
          f"{statistics.median(ratios):.2f} (median of the paired ratios)")


if __name__ == "__main__":
    main()

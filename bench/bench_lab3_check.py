"""lab3's check: the time of one ``check`` (every lab3 checker) of a run, in this tree and,
interleaved round by round, in another (``--against DIR``: a ``git archive`` of the code before).

    python bench/bench_lab3_check.py                         # a generated run of 2,000 tasks
    python bench/bench_lab3_check.py --tasks 500 --rounds 5
    python bench/bench_lab3_check.py --against /tmp/main-tree store/lab3/latest

The generated run: every task created ``ok``, published, delivered, committed and ACKed, one in
50 applied twice (a redelivery after a pause), one in 100 never committed (lost); etcd's record
holds every transaction. Each figure is the best of ``--rounds`` rounds of a child process that
times ``Lab3().check(run)`` (the model built, every checker run) with timeit, in seconds per check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _txn(rev: int, puts: dict[str, Any]) -> dict[str, Any]:
    return {"revision": rev, "puts": puts, "deletes": []}


def generated(tasks: int) -> Any:
    """A stored lab3 run of ``tasks`` tasks (see the module's docstring), built in memory."""
    from chaos.histories.ops import NEMESIS, Event, Op, OpType
    from chaos.histories.store import StoredRun
    from chaos.workloads.lab3 import keys

    history: list[Op] = []
    events: list[Event] = []
    txns = [_txn(1, {keys.COUNTER: 0})]
    counter, done = 0, {}

    def op(process: Any, type_: str, f: str, value: Any, extra: dict[str, Any]) -> None:
        t = len(history) * 0.01
        history.append(Op(index=len(history), time=t, process=process, type=OpType(type_), f=f,
                          value=value, extra=extra))  # fmt: skip

    op(
        NEMESIS,
        "info",
        "pause",
        {"node": "n1"},
        {"fault": "pause", "phase": "start", "fault_id": 1},
    )
    for i in range(tasks):
        task, eid, amount = f"t{i}", f"e-t{i}", 1 + i % 7
        op(i % 10, "invoke", "create", {"task_id": task, "amount": amount}, {})
        op(i % 10, "ok", "create", {"task_id": task, "amount": amount, "event_id": eid}, {})
        txns.append(_txn(len(txns) + 1, {
            keys.task(task): {"task_id": task, "amount": amount, "status": "pending"},
            keys.outbox(eid): {"task_id": task, "event_id": eid, "amount": amount}}))  # fmt: skip
        t = 1.0 + i * 0.01
        for kind in ("task-accepted", "publish", "delivery", "commit", "ack"):
            if kind == "commit" and i % 100 == 99:
                break  # lost: never committed
            node = f"n{1 + i % 3}"
            events.append(Event(time=t, node=node, component="worker", kind=kind, task_id=task,
                                event_id=eid, pid=10, data={"num_delivered": 1}))  # fmt: skip
        done[task] = "pending" if i % 100 == 99 else "completed"
        for _ in range(2 if i % 50 == 0 else 0 if i % 100 == 99 else 1):
            counter += amount
            txns.append(_txn(len(txns) + 1, {
                keys.COUNTER: counter, keys.result(task): {"amount": amount, "event_id": eid},
                keys.task(task): {"task_id": task, "amount": amount, "status": "completed"},
                keys.dedup(eid): {"task_id": task}}))  # fmt: skip
    op(
        NEMESIS,
        "info",
        "resume",
        {"node": "n1"},
        {"fault": "pause", "phase": "heal", "fault_id": 1},
    )
    record = {"source": "etcd", "prefix": keys.PREFIX, "from_revision": 1, "to_revision": len(txns),
              "txns": txns, "error": None, "truncated": False}  # fmt: skip
    final = {"counter": counter, "tasks": done, "record": record,
             "results": {t: {} for t, s in done.items() if s == "completed"},
             "consumer": {"delivered_consumer_seq": tasks, "delivered_stream_seq": tasks},
             "stream": {"messages": tasks},
             "journal": {"source": "etcd-proxy", "entries": [], "problems": [],
                         "nodes": {"n1": 0, "n2": 0, "n3": 0}, "unread": {}}}  # fmt: skip
    return StoredRun(path=Path("generated"), spec={"workload": "lab3"}, history=history,
                     events=events, final=final, schedule=[], problems=[])  # fmt: skip


def _child(tree: str, what: str, tasks: int) -> None:
    """In ``tree``'s code: seconds per check of the run, best of 3 timeit repeats."""
    sys.path.insert(0, tree)
    from chaos.histories.store import load_run
    from chaos.workloads.lab3.workload import Lab3

    run = generated(tasks) if what == "generated" else load_run(Path(what))
    wl = Lab3()
    number, _ = timeit.Timer(lambda: wl.check(run)).autorange()
    best = min(timeit.repeat(lambda: wl.check(run), number=number, repeat=3)) / number
    verdicts = [r.verdict.value for r in wl.check(run)]
    print(json.dumps({"seconds": best, "verdicts": verdicts}))


def _measure(tree: Path, what: str, tasks: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, __file__, "_child", str(tree), what, str(tasks)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    got: dict[str, Any] = json.loads(out.splitlines()[-1])
    return got


def main() -> None:
    if sys.argv[1:2] == ["_child"]:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="stored lab3 runs (default: a generated one)")
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another tree, measured interleaved")
    args = ap.parse_args()
    trees = [ROOT, *([args.against] if args.against else [])]
    for what in args.runs or ["generated"]:
        best: dict[Path, float] = {}
        for _ in range(args.rounds):
            for tree in trees:
                got = _measure(tree, what, args.tasks)
                best[tree] = min(best.get(tree, float("inf")), got["seconds"])
        name = f"generated ({args.tasks} tasks)" if what == "generated" else what
        line = f"{name}: {best[ROOT] * 1e3:.2f} ms a check"
        if args.against:
            other = best[args.against]
            line += f"; {args.against}: {other * 1e3:.2f} ms (ratio {best[ROOT] / other:.2f})"
        print(line + f", best of {args.rounds} rounds ({got['verdicts'].count('invalid')} invalid)")


if __name__ == "__main__":
    main()

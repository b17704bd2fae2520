"""Checker benchmarks; prints the figures recorded in docs/benchmarks.md (## Checkers).

    python bench/bench_checkers.py            # everything
    python bench/bench_checkers.py queue      # 1M-op total-queue history: parse + check
    python bench/bench_checkers.py porcupine  # linearizability on Porcupine's recorded histories
    python bench/bench_checkers.py edn        # `chaos check` on generated 100k-op EDN histories
    python bench/bench_checkers.py edn1m      # the same on a 1M-op one (~1 min to generate)
    python bench/bench_checkers.py versus     # `chaos check` vs Porcupine, 100k EDN, interleaved
    python bench/bench_checkers.py shapes     # the same on 1 key, 1,000 keys and 1M ops, 3 rounds

The queue history (1,000,000 ops = 2,000,000 lines of history.jsonl, ~190 MB) is generated into
/tmp (or $CHAOS_BENCH_DIR) once, deterministically, and checked in a fresh child process so that
its peak RSS is the checker's own. The Porcupine histories are read in place from
../shared/data/porcupine beside the repository.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PORCUPINE = ROOT.parent / "shared" / "data" / "porcupine"
BENCH_DIR = Path(os.environ.get("CHAOS_BENCH_DIR", "/tmp/chaos-bench"))
QUEUE_OPS = 1_000_000


def generate_queue_history(path: Path, n_ops: int = QUEUE_OPS, seed: int = 7) -> None:
    """A total-queue history: half enqueues, half dequeues, 10 processes, with indeterminate
    enqueues (some of which come out: recovered), a few redeliveries (duplicates) and ~1%
    failed dequeues. Valid for total-queue."""
    rng = random.Random(seed)
    n_enq = n_ops // 2
    lines = ['{"format":"chaos.history","version":1}\n']
    index = 0
    t = 0.0
    queue: list[int] = []
    head = 0
    enq_next = 0
    deq_done = 0
    procs = 10
    while enq_next < n_enq or deq_done < n_ops - n_enq:
        p = rng.randrange(procs)
        do_enq = enq_next < n_enq and (rng.random() < 0.55 or head >= len(queue))
        t += 0.000_05
        if do_enq:
            v = enq_next
            enq_next += 1
            r = rng.random()
            kind = "ok" if r < 0.99 else "info"
            lines.append(
                f'{{"index":{index},"time":{t:.6f},"process":{p},"type":"invoke",'
                f'"f":"enqueue","value":{v}}}\n'
            )
            if kind == "ok" or r < 0.995:
                queue.append(v)  # half the indeterminate ones did happen
            err = "" if kind == "ok" else ',"error":"timeout"'
            lines.append(
                f'{{"index":{index + 1},"time":{t + 0.00002:.6f},"process":{p},'
                f'"type":"{kind}","f":"enqueue","value":{v}{err}}}\n'
            )
        else:
            if head < len(queue):
                v = queue[head]
                if rng.random() >= 0.001:  # 0.1% are redelivered: dequeued again later
                    head += 1
                typ, val = "ok", str(v)
            else:
                typ, val = "fail", "null"
            deq_done += 1
            lines.append(
                f'{{"index":{index},"time":{t:.6f},"process":{p},"type":"invoke",'
                f'"f":"dequeue","value":null}}\n'
            )
            lines.append(
                f'{{"index":{index + 1},"time":{t + 0.00002:.6f},"process":{p},'
                f'"type":"{typ}","f":"dequeue","value":{val}}}\n'
            )
        index += 2
    # Drain what is left so that nothing acknowledged stays inside.
    lines.append(
        f'{{"index":{index},"time":{t:.6f},"process":0,"type":"invoke","f":"drain","value":null}}\n'
    )
    rest = ",".join(str(v) for v in queue[head:])
    lines.append(
        f'{{"index":{index + 1},"time":{t + 0.001:.6f},"process":0,"type":"ok",'
        f'"f":"drain","value":[{rest}]}}\n'
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(path)


def generate_cas_history(
    path: Path,
    n_ops: int,
    seed: int = 15,
    *,
    keys: int = 1000,
    procs: int = 20,
    timeouts: float = 0.01,
) -> None:
    """A Jepsen independent cas-register history as ``history.edn`` (one op map per line, the
    key order Jepsen writes) and the same ops as chaos ``history.jsonl`` beside it.

    ``procs`` processes (20), ``keys`` keys (1,000), reads / writes / cas on ``[key value]``
    tuples; each op takes effect at its completion, so the history is linearizable. A share
    ``timeouts`` of ops (1%) time out (``:info``; half of them took effect) and cas ops whose
    compare fails complete ``:fail``.
    """
    rng = random.Random(seed)
    state: dict[int, int | None] = {}
    busy: dict[int, tuple[str, int, object]] = {}
    next_proc = {p: p for p in range(procs)}  # a process that timed out is replaced, as Jepsen
    edn_lines: list[str] = []
    json_lines = ['{"format":"chaos.history","version":1}\n']
    t = 0
    index = 0
    done = 0

    def emit(typ: str, p: int, f: str, value: object, error: str | None = None) -> None:
        nonlocal index
        ev = _edn(value)
        err = f", :error :{error}" if error else ""
        edn_lines.append(
            f"{{:type :{typ}, :f :{f}, :value {ev}, :time {t}, :process {p}, :index {index}{err}}}\n"
        )
        jerr = f',"error":"{error}"' if error else ""
        json_lines.append(
            f'{{"index":{index},"time":{t / 1e9:.9f},"process":{p},"type":"{typ}",'
            f'"f":"{f}","value":{json.dumps(value)}{jerr}}}\n'
        )
        index += 1

    invoked = 0
    while done < n_ops:
        t += rng.randrange(20_000, 200_000)
        slot = rng.randrange(procs)
        p = next_proc[slot]
        if p not in busy:
            if invoked >= n_ops:
                continue
            invoked += 1
            k = rng.randrange(keys)
            r = rng.random()
            if r < 0.5:
                f, arg = "read", None
            elif r < 0.75:
                f, arg = "write", rng.randrange(5)
            else:
                f, arg = "cas", [rng.randrange(5), rng.randrange(5)]
            busy[p] = (f, k, arg)
            emit("invoke", p, f, [k, arg])
            continue
        f, k, arg = busy.pop(p)
        done += 1
        cur = state.get(k)
        if rng.random() < timeouts:  # a timeout: it may or may not have happened
            if rng.random() < 0.5 and f == "write":
                state[k] = arg  # type: ignore[assignment]
            elif rng.random() < 0.5 and f == "cas" and cur == arg[0]:  # type: ignore[index]
                state[k] = arg[1]  # type: ignore[index]
            emit("info", p, f, [k, arg], "timeout")
            next_proc[slot] = p + procs
            continue
        if f == "read":
            emit("ok", p, f, [k, cur])
        elif f == "write":
            state[k] = arg  # type: ignore[assignment]
            emit("ok", p, f, [k, arg])
        elif cur == arg[0]:  # type: ignore[index]
            state[k] = arg[1]  # type: ignore[index]
            emit("ok", p, f, [k, arg])
        else:
            emit("fail", p, f, [k, arg])
    path.parent.mkdir(parents=True, exist_ok=True)
    for out, lines in ((path, edn_lines), (path.with_suffix(".jsonl"), json_lines)):
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(lines))
        tmp.replace(out)


def _edn(v: object) -> str:
    if v is None:
        return "nil"
    if isinstance(v, list):
        return "[" + " ".join(_edn(x) for x in v) + "]"
    return str(v)


def _child_edn(path: str) -> None:
    """Where the time of ``chaos check FILE --model cas-register`` goes, stage by stage."""
    import gc

    from chaos.checkers.linearizable import check_partitions, prepare
    from chaos.checkers.models import cas_register
    from chaos.histories import edn

    gc.disable()  # as check_file does
    t0 = time.perf_counter()
    ops, problems = edn.read_history(Path(path))
    t1 = time.perf_counter()
    model = cas_register()
    parts, stats = prepare(ops, model, independent=True)
    t2 = time.perf_counter()
    res = check_partitions(parts, model)
    t3 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = Path(path).stat().st_size
    print(
        json.dumps(
            {
                "read": round(t1 - t0, 3),
                "mb_per_s": round(size / 1e6 / (t1 - t0), 1),
                "prepare": round(t2 - t1, 3),
                "search": round(t3 - t2, 3),
                "verdict": res.verdict.value,
                "ops": stats["ops"],
                "problems": len(problems),
                "max_rss_mb": round(rss),
            }
        )
    )


def _wall(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, exit code and stdout of a command run from the repository's root."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return time.perf_counter() - t0, out.returncode, out.stdout


def bench_edn(n_ops: int = 100_000, runs: int = 3) -> None:
    """``chaos check`` (the real command, interpreter start included) on a generated
    independent cas-register history, as EDN and as JSONL; then the stages in process."""
    tag = f"{n_ops // 1000}k" if n_ops < 1_000_000 else f"{n_ops // 1_000_000}M"
    path = BENCH_DIR / f"cas-{tag}.edn"
    if not path.exists():
        t0 = time.perf_counter()
        generate_cas_history(path, n_ops)
        print(f"generated {path} in {time.perf_counter() - t0:.1f} s")
    size = path.stat().st_size
    print(f"cas-register: {path} ({n_ops} ops, {size / 1e6:.1f} MB)")
    for p in (path, path.with_suffix(".jsonl")):
        walls = []
        for _ in range(runs):
            cmd = [sys.executable, "-m", "chaos.cli", "check", str(p), "--model", "cas-register"]
            cmd.append("--independent")  # keys are split only when asked
            wall, code, _ = _wall(cmd)
            walls.append(wall)
        print(f"  chaos check {p.name}: wall {', '.join(f'{w:.2f}' for w in walls)} s; exit {code}")
    stages = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "_child_edn", str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        stages.append(json.loads(out))
    best = min(stages, key=lambda r: r["read"] + r["prepare"] + r["search"])
    print(
        f"  in process, best of {runs}: read {best['read']:.2f} s ({best['mb_per_s']} MB/s), "
        f"pair + encode {best['prepare']:.2f} s, search {best['search']:.2f} s; "
        f"peak RSS {best['max_rss_mb']} MB; {best['ops']} ops, {best['verdict']}"
    )


PORCUPINE_SRC = Path(os.environ.get("PORCUPINE_SRC", "/tmp/porcupine"))
PORCUPINE_HOW = """\
Porcupine is not built: this mode needs Go and a checkout of Porcupine in $PORCUPINE_SRC
(default /tmp/porcupine). On Debian: apt-get install -y golang-go; then
git clone https://github.com/anishathalye/porcupine /tmp/porcupine (commit 55508eb measured).
The harness bench/porcupine/chaosbench_test.go is copied there and built with go test -c."""


def _porcupine_binary() -> Path | None:
    """Porcupine's test binary with chaos's harness in it (built once), or None (says how)."""
    out = BENCH_DIR / "porcupine.test"
    harness = ROOT / "bench" / "porcupine" / "chaosbench_test.go"
    if not (PORCUPINE_SRC / "go.mod").exists() or not shutil.which("go"):
        print(PORCUPINE_HOW)
        return None
    (PORCUPINE_SRC / harness.name).write_bytes(harness.read_bytes())
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=mod"}
    cmd = ["go", "test", "-c", "-o", str(out), "."]
    subprocess.run(cmd, cwd=PORCUPINE_SRC, env=env, check=True)
    return out


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, int, str]:
    """Wall and CPU seconds (user + system, this child's own), peak RSS (MB), exit code and
    stdout of one command."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as p:
        t0 = time.perf_counter()
        assert p.stdout is not None
        out = p.stdout.read().decode()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode, out


def _chaos_env() -> dict[str, str]:
    """The environment chaos's side runs in: this tree, its bytecode cached as an installed
    chaos has it (in $CHAOS_BENCH_DIR/pycache, whatever PYTHONDONTWRITEBYTECODE says)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(BENCH_DIR / "pycache")
    env["PYTHONPATH"] = str(ROOT)
    return env


def bench_versus(rounds: int = 5) -> None:
    """``chaos check`` on the 100k-op cas-register EDN against Porcupine on the same ops (its
    JSONL twin), in interleaved rounds (who goes first alternates): wall, CPU, peak RSS, and the
    ratio in each round. chaos runs in this interpreter (not a pyenv shim) with its bytecode
    cached, as an installed chaos has it (in $CHAOS_BENCH_DIR/pycache, whatever
    PYTHONDONTWRITEBYTECODE says); the first run of each writes caches and is not counted."""
    path = BENCH_DIR / "cas-100k.edn"
    if not path.exists():
        generate_cas_history(path, 100_000)
    pb = _porcupine_binary()
    if pb is None:
        return
    chaos_env = _chaos_env()
    chaos_cmd = [sys.executable, "-m", "chaos.cli", "check", str(path), "--model", "cas-register"]
    chaos_cmd.append("--independent")
    pb_env = {**os.environ, "CHAOS_HISTORY": str(path.with_suffix(".jsonl"))}
    pb_cmd = [str(pb), "-test.run", "TestChaosBench"]
    sides = {"chaos": (chaos_cmd, chaos_env), "porcupine": (pb_cmd, pb_env)}
    for cmd, env in sides.values():
        _timed(cmd, env)  # caches: bytecode, the files in the page cache
    print(
        f"chaos check {path.name} (17.7 MB EDN) vs Porcupine on {path.with_suffix('.jsonl').name}"
    )
    walls: dict[str, list[float]] = {"chaos": [], "porcupine": []}
    for r in range(rounds):
        order = ["chaos", "porcupine"] if r % 2 == 0 else ["porcupine", "chaos"]
        got = {}
        load = os.getloadavg()[0]
        for side in order:
            got[side] = _timed(*sides[side])
        (cw, cc, cm, ce, _), (pw, pc, pm, pe, pout) = got["chaos"], got["porcupine"]
        ok = ce == 0 and pe == 0 and "linearizable=true" in pout
        walls["chaos"].append(cw)
        walls["porcupine"].append(pw)
        print(
            f"  round {r + 1} (load {load:.1f}): chaos {cw:.2f} s wall, {cc:.2f} s CPU, "
            f"{cm:.0f} MB; Porcupine {pw:.2f} s wall, {pc:.2f} s CPU, {pm:.0f} MB; "
            f"ratio wall {cw / pw:.2f}x, CPU {cc / pc:.2f}x{'' if ok else '; VERDICTS DIFFER'}"
        )
    best = min(walls["chaos"]) / min(walls["porcupine"])
    print(
        f"  best walls: chaos {min(walls['chaos']):.2f} s, Porcupine {min(walls['porcupine']):.2f} s ({best:.2f}x)"
    )


# The shapes of issue 30: (label, file name, ops, generator keywords). One key with 5 processes
# (Jepsen's usual concurrency for a single register); the 1,000-key ones as ``edn``/``versus``.
SHAPES = (
    ("1 key, 100k ops", "cas1-100k.edn", 100_000, {"keys": 1, "procs": 5}),
    ("1,000 keys, 100k ops", "cas-100k.edn", 100_000, {}),
    ("1,000 keys, 1M ops", "cas-1M.edn", 1_000_000, {}),
)
_AS_LIMIT = 8 << 30  # address space per side: Porcupine's cache grows with the history


def _time_v(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One run of ``cmd`` under ``/usr/bin/time -v``: its wall, CPU (user + system) and peak
    RSS as time reports them, exit status and stdout."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))

    out = subprocess.run(
        ["/usr/bin/time", "-v", *cmd],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        preexec_fn=cap,  # the limit is the child's alone, set before exec
    )
    got: dict[str, Any] = {"code": out.returncode, "stdout": out.stdout}
    for line in out.stderr.splitlines():
        name, _, value = line.strip().rpartition(": ")
        if name == "User time (seconds)":
            got["user"] = float(value)
        elif name == "System time (seconds)":
            got["sys"] = float(value)
        elif name.startswith("Elapsed (wall clock)"):
            parts = [float(x) for x in value.split(":")]
            got["wall"] = sum(x * 60**i for i, x in enumerate(reversed(parts)))
        elif name == "Maximum resident set size (kbytes)":
            got["rss_mb"] = int(value) / 1024
    got["cpu"] = got["user"] + got["sys"]
    return got


def bench_shapes(rounds: int = 3) -> None:
    """Issue 30's three shapes, ``chaos check FILE --model cas-register --independent`` on the
    EDN beside Porcupine on its JSONL twin, each under ``/usr/bin/time -v``, in rounds (who
    goes first alternates); the ratio of each round, and the load (1-minute average)."""
    pb = _porcupine_binary()
    if pb is None:
        return
    chaos_env = _chaos_env()
    for label, name, n_ops, kw in SHAPES:
        path = BENCH_DIR / name
        if not path.exists():
            generate_cas_history(path, n_ops, **kw)
        # a generous search budget: on a loaded machine the default 60 s of wall can run out
        chaos_cmd = [sys.executable, "-m", "chaos.cli", "check", str(path)]
        chaos_cmd += ["--model", "cas-register", "--independent", "--search-timeout", "900"]
        pb_env = {**os.environ, "CHAOS_HISTORY": str(path.with_suffix(".jsonl"))}
        sides = {
            "chaos": (chaos_cmd, chaos_env),
            "porcupine": ([str(pb), "-test.run", "TestChaosBench"], pb_env),
        }
        _time_v(*sides["chaos"])  # bytecode and the page cache
        print(f"{label}: {name} ({path.stat().st_size / 1e6:.1f} MB EDN) vs Porcupine on its JSONL")
        for r in range(rounds):
            order = ["chaos", "porcupine"] if r % 2 == 0 else ["porcupine", "chaos"]
            load = os.getloadavg()[0]
            got = {side: _time_v(*sides[side]) for side in order}
            c, p = got["chaos"], got["porcupine"]
            ok = c["code"] == 0 and p["code"] == 0 and "linearizable=true" in p["stdout"]
            print(
                f"  round {r + 1} (load {load:.1f}): chaos {c['wall']:.2f} s wall, "
                f"{c['cpu']:.2f} s CPU, {c['rss_mb']:.0f} MB; Porcupine {p['wall']:.2f} s wall, "
                f"{p['cpu']:.2f} s CPU, {p['rss_mb']:.0f} MB; ratio wall {c['wall'] / p['wall']:.2f}x, "
                f"CPU {c['cpu'] / p['cpu']:.2f}x{'' if ok else '; NOT BOTH VALID (exit ' + str(c['code']) + ')'}",
                flush=True,
            )


def _child_queue(path: str) -> None:
    from chaos.checkers.offline import check_file
    from chaos.checkers.verdict import combine

    t0 = time.perf_counter()
    c0 = time.process_time()
    results, problems = check_file(Path(path), "total-queue")
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tq = results[0]
    print(
        json.dumps(
            {
                "seconds": round(dt, 3),
                "cpu_seconds": round(cpu, 3),
                "max_rss_mb": round(rss),
                "verdict": combine(results).value,
                "total_queue": tq.verdict.value,
                "stats": tq.stats,
                "problems": len(problems),
            }
        )
    )


def bench_queue() -> None:
    path = BENCH_DIR / "total-queue-1M.jsonl"
    if not path.exists():
        t0 = time.perf_counter()
        generate_queue_history(path)
        print(f"generated {path} in {time.perf_counter() - t0:.1f} s")
    with open(path, "rb") as fh:
        lines = sum(1 for _ in fh)
    print(f"total-queue: {path} ({lines} lines, {path.stat().st_size / 1e6:.0f} MB)")
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, __file__, "_child_queue", str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        wall = time.perf_counter() - t0
        r = json.loads(out)
        r["process_wall_seconds"] = round(wall, 3)
        runs.append(r)
    best = min(runs, key=lambda r: r["seconds"])
    print(
        "  parse + check (in process, wall / cpu): "
        + ", ".join(f"{r['seconds']:.2f} / {r['cpu_seconds']:.2f} s" for r in runs)
        + f"; whole process incl. interpreter start: {best['process_wall_seconds']:.2f} s"
    )
    print(f"  peak RSS {max(r['max_rss_mb'] for r in runs)} MB; verdict {best['verdict']}")
    print(f"  total-queue stats: {best['stats']}")


def bench_porcupine() -> None:
    from chaos.checkers.linearizable import check_linearizable
    from chaos.checkers.models import cas_register, kv
    from chaos.histories import edn, jepsen_log

    expected = [
        line.split("\t")
        for line in (PORCUPINE / "expected.tsv").read_text().splitlines()
        if line.strip()
    ]
    best: dict[str, float] = {}
    for _ in range(3):
        parse = check = 0.0
        c50 = 0.0
        mismatches = []
        for name, want in expected:
            t0 = time.perf_counter()
            if name.startswith("jepsen/"):
                ops, _ = jepsen_log.read_log(PORCUPINE / name)
                model = cas_register()
            else:
                ops, _ = edn.read_history(PORCUPINE / name)
                model = kv()
            t1 = time.perf_counter()
            r = check_linearizable(ops, model)
            t2 = time.perf_counter()
            parse += t1 - t0
            check += t2 - t1
            if name == "kv/c50-bad.txt":
                c50 = t2 - t0
            if r.verdict.value != ("valid" if want == "linearizable" else "invalid"):
                mismatches.append(name)
        run = {"parse": parse, "check": check, "total": parse + check, "c50": c50}
        if not best or run["total"] < best["total"]:
            best = run
        if mismatches:
            print(f"  MISMATCHED VERDICTS: {mismatches}")
    print(f"porcupine: {len(expected)} histories (102 etcd logs + 6 kv), best of 3")
    print(
        f"  parse {best['parse']:.3f} s + check {best['check']:.3f} s = "
        f"{best['total']:.3f} s; c50-bad parse + check {best['c50']:.3f} s"
    )


def main(argv: list[str]) -> None:
    if argv and argv[0] == "_child_queue":
        _child_queue(argv[1])
        return
    if argv and argv[0] == "_child_edn":
        _child_edn(argv[1])
        return
    which = set(argv) or {"queue", "porcupine", "edn"}
    if "porcupine" in which:
        bench_porcupine()
    if "queue" in which:
        bench_queue()
    if "edn" in which:
        bench_edn()
    if "edn1m" in which:
        bench_edn(1_000_000, runs=1)
    if "versus" in which:
        bench_versus()
    if "shapes" in which:
        bench_shapes()


if __name__ == "__main__":
    main(sys.argv[1:])

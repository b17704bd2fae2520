"""The host side of a run's network confinement: its nodes reach their own bridge and nothing else.

A run's bridge is ``internal`` (Docker routes nothing beyond it), but that only stops forwarding:
the host itself answers on the bridge's gateway and on every address it has (the nodes' default
route is the gateway), so the code under test, even as the service user, could reach any listener
on the host (a grade's Dask dashboard, a scheduler, a database) and, through a forwarding rule
someone else added, other networks. Each run therefore gets a chain of its own on the host,
``CHAOS-HOST-<run id>``, in the ``filter`` table of both IPv4 and IPv6:

- ``INPUT -i <bridge>``: everything a node sends to any of the host's addresses;
- ``DOCKER-USER`` (``FORWARD`` when Docker made none) ``-i <bridge> ! -o <bridge>`` and
  ``! -i <bridge> -o <bridge>``: everything between the run's bridge and any other network, both
  ways (other runs' bridges, the default bridge, the host's uplinks);

and the chain lets through only replies to connections the host opened (the orchestrator connects
*to* the nodes: its clients, probes and final reads), rejecting the rest (a TCP reset, else ICMP
``admin-prohibited``: a node learns at once that the path is closed; no timeout to wait out).
Traffic between the run's own nodes never leaves the bridge and is not touched. The interface, not
the source address, is matched: a node has no capability to forge a source, and a source match
would also catch the host's own traffic from its gateway address.

Crash safety: the record ``<RECORDS>/<chain>.json`` (run id, bridge, the orchestrator's owner
token) is written durably *before* any rule exists and removed only after the last rule is gone,
so a chain on the host without a record is always a leftover, and a record whose owner died names
a leftover too. :func:`leftovers` finds both; the Docker reaper removes them with the run's
containers. Rules are installed with one ``iptables-restore --noflush`` per family (all or
nothing) and removed the same way; removal is idempotent. Nothing but the run's own chain and the
jumps into it is ever touched.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from chaos.cluster.base import ClusterError
from chaos.cluster.node_kit.owner import owner_alive
from chaos.histories.files import read_regular, write_atomic

# beside the kernel's rules in lifetime: both are gone after a reboot
RECORDS = Path("/run/chaos-firewall")
PREFIX = "CHAOS-HOST-"
# (command prefix, reject type) per family
FAMILIES = {
    "ipv4": ("iptables", "icmp-admin-prohibited"),
    "ipv6": ("ip6tables", "icmp6-adm-prohibited"),
}
TIMEOUT = 30.0


def chain_for(run_id: str) -> str:
    # iptables chain names are at most 28 characters
    return f"{PREFIX}{run_id}"[:28]


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """What the host holds for one run, written before the rules exist."""

    run_id: str
    bridge: str
    owner: str  # owner_token of the orchestrator (node_kit.owner): pid and start time
    chain: str = ""

    def __post_init__(self) -> None:
        if not self.chain:
            object.__setattr__(self, "chain", chain_for(self.run_id))


def _tool(family: str, verb: str) -> str:
    return f"{FAMILIES[family][0]}-{verb}"


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


def _forward_chain(family: str) -> str:
    """DOCKER-USER when Docker keeps one for this family (it runs first in FORWARD, and Docker
    never rewrites it), else FORWARD itself."""
    p = _run([FAMILIES[family][0], "-w", "5", "-n", "-L", "DOCKER-USER"])
    return "DOCKER-USER" if p.returncode == 0 else "FORWARD"


def rules(rec: Record, family: str, forward: str) -> list[str]:
    """The ``iptables-restore`` lines (``filter`` table) that confine the run's bridge."""
    chain, br = rec.chain, rec.bridge
    tag = ["-m", "comment", "--comment", f'"chaos run {rec.run_id}"']
    reject = FAMILIES[family][1]
    return [
        f":{chain} - [0:0]",
        f"-A {chain} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
        # a reset for TCP: the kernel rate-limits ICMP errors to a peer (a burst of 6, then one a
        # second), so a node probing many ports would see timeouts instead of a refusal
        f"-A {chain} -p tcp -j REJECT --reject-with tcp-reset",
        f"-A {chain} -j REJECT --reject-with {reject}",
        " ".join(["-I", "INPUT", "1", "-i", br, *tag, "-j", chain]),
        " ".join(["-I", forward, "1", "-i", br, "!", "-o", br, *tag, "-j", chain]),
        " ".join(["-I", forward, "1", "!", "-i", br, "-o", br, *tag, "-j", chain]),
    ]


def _families() -> list[str]:
    """The families this host can filter (ip6tables may be missing where IPv6 is off)."""
    out = []
    for fam in FAMILIES:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            if _run([_tool(fam, "save"), "-t", "filter"]).returncode == 0:
                out.append(fam)
    return out


def install(rec: Record, records: Path = RECORDS) -> None:
    """Record, then install, the run's chain for every family; on any failure undo what was done
    and raise ClusterError (a run must not start unconfined)."""
    try:
        records.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(records / f"{rec.chain}.json", json.dumps(asdict(rec)).encode())
    except OSError as e:
        raise ClusterError(
            f"cannot record run {rec.run_id}'s host rules in {records} ({e}); the Docker backend "
            "confines each run with iptables and needs root"
        ) from e
    fams = _families()
    try:
        if "ipv4" not in fams:
            raise ClusterError("iptables-save does not work on this host: runs cannot be confined")
        for fam in fams:
            batch = ["*filter", *rules(rec, fam, _forward_chain(fam)), "COMMIT", ""]
            p = _run([_tool(fam, "restore"), "-w", "5", "--noflush"], "\n".join(batch))
            if p.returncode != 0:
                raise ClusterError(
                    f"could not confine run {rec.run_id}'s network ({_tool(fam, 'restore')}: "
                    f"{p.stderr.strip() or p.stdout.strip()})"
                )
    except BaseException:
        remove(rec.run_id, records)
        raise


def _save(family: str) -> str:
    try:
        p = _run([_tool(family, "save"), "-t", "filter"])
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout if p.returncode == 0 else ""


def _undo_lines(saved: str, chain: str) -> list[str]:
    """``iptables-restore`` lines that delete every jump into ``chain``, then the chain."""
    lines = saved.splitlines()
    if not any(ln.split(" ", 1)[0] == f":{chain}" for ln in lines):
        return []
    out = []
    for ln in lines:
        parts = ln.split()
        if (
            len(parts) > 2
            and parts[0] == "-A"
            and parts[1] != chain
            and parts[-2:] == ["-j", chain]
        ):
            out.append("-D" + ln[2:])
    return [*out, f"-F {chain}", f"-X {chain}"]


def remove(run_id: str, records: Path = RECORDS) -> list[str]:
    """Remove the run's chain and every jump into it, then its record; idempotent. Returns what
    it removed. Raises ClusterError if a rule stays (the record stays too, for the next reap)."""
    chain = chain_for(run_id)
    done = []
    for fam in FAMILIES:
        undo = _undo_lines(_save(fam), chain)
        if not undo:
            continue
        p = _run([_tool(fam, "restore"), "-w", "5", "--noflush"], "\n".join(
            ["*filter", *undo, "COMMIT", ""]
        ))  # fmt: skip
        left = _undo_lines(_save(fam), chain)
        if p.returncode != 0 and not left:
            continue  # another reaper removed it between the two reads: gone, as asked
        if p.returncode != 0 or left:
            raise ClusterError(
                f"could not remove {chain} ({fam}): {p.stderr.strip() or 'it is still there'}"
            )
        done.append(f"host chain {chain} ({fam}, {len(undo) - 2} jump(s))")
    with contextlib.suppress(FileNotFoundError):
        (records / f"{chain}.json").unlink()
    return done


def read_records(records: Path = RECORDS) -> list[Record]:
    out = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for path in sorted(records.iterdir()):
            if not path.name.startswith(PREFIX) or path.suffix != ".json":
                continue
            try:
                data = json.loads(read_regular(path, 64 << 10))
                out.append(Record(**{k: str(data[k]) for k in ("run_id", "bridge", "owner")}))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


def installed_chains() -> set[str]:
    """The run chains present on the host, in any family."""
    out = set()
    for fam in FAMILIES:
        for ln in _save(fam).splitlines():
            if ln.startswith(f":{PREFIX}"):
                out.add(ln[1:].split(" ", 1)[0])
    return out


def leftovers(
    records: Path = RECORDS, alive: Callable[[str | None], bool] = owner_alive
) -> set[str]:
    """Run ids whose host rules a dead orchestrator left: a record whose owner is gone, or a chain
    with no record at all (a record is written before the first rule and removed after the last)."""
    # chains first: a run starting meanwhile wrote its record before its chain, so any chain
    # seen here has its record seen below (read the other way round, it would look orphaned)
    chains = installed_chains()
    recs = read_records(records)
    dead = {r.run_id for r in recs if not alive(r.owner)}
    known = {r.chain for r in recs}
    for chain in chains - known:
        dead.add(chain.removeprefix(PREFIX))
    return dead


def remove_all(run_ids: Iterable[str], records: Path = RECORDS) -> list[str]:
    out = []
    for rid in sorted(set(run_ids)):
        out += remove(rid, records)
    return out


def all_runs(records: Path = RECORDS) -> set[str]:
    """Every run with rules or a record on this host, alive or not."""
    return {r.run_id for r in read_records(records)} | {
        c.removeprefix(PREFIX) for c in installed_chains()
    }

"""``etcd-rw-register``: multi-key read/write-register transactions on the real 3-member etcd.

Each key holds an integer; a micro-op reads a key (``nil`` before any write) or writes a value
never written before, so that a read's value names the write it saw and the checker can recover
versions (Elle's rw-register). The clients, the generator and the check are
:mod:`chaos.workloads.etcd_txn`'s. A transaction needs from etcd only the keys it reads before
writing them (a write does not depend on the old value); the safe client guards exactly those,
and a transaction whose compare failed is ``fail`` at once: it is never run again behind the
history's back, the client's next op is a new transaction.
"""

from __future__ import annotations

from chaos.workloads.etcd_txn import EtcdTxn, Mops, TxnModel


def _read(value: int | None) -> int | None:
    return value


def _write(_old: int | None, v: int) -> int:
    return v


def _read_first(mops: Mops) -> set[int]:
    """The keys whose first micro-op is a read: the only values the transaction takes from etcd."""
    seen: set[int] = set()
    out: set[int] = set()
    for f, k, _ in mops:
        if k not in seen and f == "r":
            out.add(k)
        seen.add(k)
    return out


MODEL = TxnModel(
    data_model="rw-register",
    prefix="/rw-register/",
    write="w",
    final="registers",
    read=_read,
    update=_write,
    must_read=_read_first,
    encode=str,
    decode=int,
    attempts=1,
    # half the writes are read-modify-writes: versions ordered, updates to lose
    read_first=0.5,
)


class EtcdRwRegister(EtcdTxn):
    name = "etcd-rw-register"
    model = MODEL

"""``etcd-append``: multi-key list-append transactions on the real 3-member etcd (Elle's workload).

Each key holds a JSON list; a micro-op reads a key's whole list or appends a unique element to
it. The clients, the generator and the check are :mod:`chaos.workloads.etcd_txn`'s; the safe
client tries a transaction whose compare failed again from its read, up to :data:`ATTEMPTS`
times, before it is ``fail`` (the retry reads again: what is recorded is the attempt that
committed).
"""

from __future__ import annotations

import json

from chaos.workloads.etcd_txn import EtcdTxn, Mops, TxnModel

ATTEMPTS = 20


def _read(lst: list[int] | None) -> list[int]:
    return list(lst or [])


def _append(lst: list[int] | None, v: int) -> list[int]:
    return [*(lst or []), v]


def _every_key(mops: Mops) -> set[int]:
    return {k for _, k, _ in mops}  # an append needs the list it appends to


MODEL = TxnModel(
    data_model="list-append",
    prefix="/append/",
    write="append",
    final="lists",
    read=_read,
    update=_append,
    must_read=_every_key,
    encode=json.dumps,
    decode=json.loads,
    attempts=ATTEMPTS,
)


class EtcdAppend(EtcdTxn):
    name = "etcd-append"
    model = MODEL

"""The etcd key layout of lab1 and its fixed workload, shared by the service, the solutions, the
final reads and the checkers.

    /lab1/config                          what the replicas were started with (orders, nights)
    /lab1/locks/<name>                    the ShedLock-style lease record of a job
    /lab1/orders/<order>                  one order's row: balance, last_token, night
    /lab1/applied/<order>/<night>/<...>   one key per applied change: a double apply is two keys
    /lab1/nights/<night>                  written once when a night's job has finished
"""

from __future__ import annotations

PREFIX = "/lab1/"
CONFIG = PREFIX + "config"
LOCKS_PREFIX = PREFIX + "locks/"
ORDERS_PREFIX = PREFIX + "orders/"
APPLIED_PREFIX = PREFIX + "applied/"
NIGHTS_PREFIX = PREFIX + "nights/"

JOB = "reconciliation"


def lock(name: str) -> str:
    return LOCKS_PREFIX + name


def order(order_id: str) -> str:
    return ORDERS_PREFIX + order_id


def applied_prefix(order_id: str, night: int) -> str:
    # zero-padded so that a prefix scan returns nights in order
    return f"{APPLIED_PREFIX}{order_id}/{night:06d}/"


def applied(order_id: str, night: int, token: int, node: str, nonce: str) -> str:
    # unique per application, so two applications can never collapse into one key
    return f"{applied_prefix(order_id, night)}{token:012d}-{node}-{nonce}"


def night_done(night: int) -> str:
    return f"{NIGHTS_PREFIX}{night:06d}"


def order_ids(count: int) -> list[str]:
    return [f"o{i}" for i in range(1, count + 1)]


def change_amount(order_id: str, night: int) -> int:
    """The change the reconciliation of ``night`` applies to ``order_id`` (fixed, so a checker
    can compute the balance every order must end with)."""
    idx = int(order_id.lstrip("o") or 0)
    return 1 + (idx * 7 + night * 3) % 9

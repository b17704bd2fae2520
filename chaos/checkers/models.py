"""Sequential specifications for the linearizability checker, as plain data.

A :class:`Model` is Porcupine's shape: an initial state, a pure ``step(state, input, output) ->
(ok, new_state)``, and states that are hashable and compare with ``==`` (the checker memoises on
them). It also says how a Jepsen op (invoke plus completion) becomes an ``(input, output)`` pair
(:attr:`Model.encode`), which ops never change the state (:attr:`Model.read_only`: an
indeterminate read tells nothing, so the checker drops it; a determinate one commutes with
everything, which the search exploits), and how to describe an op in evidence.

Indeterminate ops (``info``, or an invoke that never completed) reach ``step`` with the output
:data:`UNKNOWN`: the op may have taken effect with any result, or not at all (the checker does not
require it to be linearized). ``fail`` ops did not happen and are dropped by ``encode`` returning
``None`` — except, by default, a failed compare-and-set with no ``error``, which Jepsen's
clients (and Porcupine's etcd model) report when the compare itself failed: that is an
observation that the register did not hold the expected value, so ``cas-register`` keeps it with
output ``False``. The register models take Knossos' reading instead when asked (``failed_cas=
"absent"``, ``nil_read="any"``, an ``init``): see :mod:`chaos.checkers.semantics`.

Values are compared as EDN values, not as Python's: :func:`freeze` keeps ``1``, ``1.0``,
``true``, ``"a"`` and ``:a`` apart (:class:`Typed`), and :func:`_show` prints them as EDN.

Keys: when ops carry a key (a ``key`` field, or Jepsen's independent ``[key value]`` tuples), the
checker splits the history by key and checks each key against a fresh model — the state here is
always one key's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal, TypeAlias

from chaos.histories.edn import Char, Keyword, Symbol, dumps
from chaos.histories.ops import JSONValue, OpType

__all__ = [
    "MODELS",
    "UNKNOWN",
    "FailedCas",
    "Input",
    "Model",
    "NilRead",
    "RegisterSpec",
    "Typed",
    "cas_register",
    "counter",
    "freeze",
    "kv",
    "queue",
    "register",
    "set_model",
    "thaw",
]


class _Unknown:
    """The output of an op whose outcome is unknown (``info`` or never completed)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "?"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()

# encode(f, invoke value, completion value, completion type or None) -> (input, output) | None
Encoder = Callable[[str, JSONValue, JSONValue, "OpType | None"], "tuple[Any, Any] | None"]


# A model's input: its op code first, then the op's frozen values (read by the model that made them)
Input: TypeAlias = tuple[Any, ...]


class UnknownOp(ValueError):
    """An op the model has no meaning for (a ``dequeue`` in a register history)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Model:
    name: str
    init: Hashable
    step: Callable[[Any, Any, Any], tuple[bool, Any]]
    encode: Encoder
    # True when the op, with this output, leaves every state unchanged (a read; a cas that
    # reported failure). Indeterminate ones are dropped; determinate ones are forced moves.
    read_only: Callable[[Any, Any], bool]
    describe: Callable[[Any, Any], str]
    # Optional extra split of one key's ops into independent parts (by input); None = no split.
    partition: Callable[[Any], Hashable] | None = None
    # The register models' options, for the checker's one-pass encoding of their ops
    # (chaos.checkers.register_records, tested against ``encode``); None for other models.
    register: RegisterSpec | None = None


@dataclass(frozen=True, slots=True)
class RegisterSpec:
    """How a register model reads ops (see :func:`cas_register`)."""

    with_cas: bool
    nil_read: NilRead
    failed_cas: FailedCas


@dataclass(frozen=True, slots=True)
class Typed:
    """A value Python's ``==`` would confuse with another type's: ``True == 1 == 1.0`` and
    ``Keyword("a") == "a"`` in Python, but not in EDN (Clojure's ``=``) nor in Porcupine.

    :func:`freeze` wraps booleans, floats, keywords, symbols, characters and BigDecimals in it,
    so that states and outputs compare as EDN values do: ``1`` (an integer), ``1.0`` (a float),
    ``1M``, ``true``, ``"a"``, ``:a``, ``a`` and ``\a`` are all different, while integers of any
    size (``1``, ``1N``) stay plain ``int`` and fast.
    """

    kind: str  # "bool", "float", "keyword", "symbol", "char" or "decimal"
    value: object


_UNFROZEN: Final[dict[str, Callable[[Any], Any]]] = {
    "symbol": Symbol,
    "char": Char,
    "decimal": Decimal,
}
_TRUE: Final = Typed("bool", True)
_FALSE: Final = Typed("bool", False)


def freeze(v: JSONValue) -> Any:  # Any: a frozen value, read by the model that made it
    """A hashable form of a JSON/EDN value whose ``==`` is EDN's (Clojure's ``=``).

    Lists become tuples, maps a tagged tuple of sorted items, sets frozensets; booleans, floats
    and keywords become :class:`Typed` (see there). Integers, strings and nil stay as they are.
    """
    t = type(v)
    if t is int or t is str or v is None:
        return v
    if t is bool:
        return _TRUE if v else _FALSE
    if t is float:
        return Typed("float", v)
    if isinstance(v, (list, tuple)):
        return tuple([freeze(x) for x in v])
    if isinstance(v, Keyword):
        return Typed("keyword", str.__str__(v))
    if isinstance(v, (Symbol, Char)):
        return Typed(type(v).__name__.lower(), str.__str__(v))
    if isinstance(v, str):  # a Tagged literal, or another str subclass: its text
        return v
    if isinstance(v, Decimal):  # 1.5M: not the double 1.5, nor 1M the long 1 (Clojure's =)
        return Typed("decimal", v)
    if isinstance(v, dict):
        items = [(freeze(k), freeze(x)) for k, x in v.items()]
        try:
            items.sort()
        except TypeError:
            items.sort(key=repr)
        return ("__map__", tuple(items))
    if isinstance(v, (set, frozenset)):
        return frozenset(freeze(x) for x in v)
    if isinstance(v, int):  # an int subclass (IntEnum...): its number
        return int(v)
    return v


def thaw(v: object) -> JSONValue:
    """The JSON form of a frozen value, for evidence: keywords as ``":name"`` strings."""
    if type(v) is Typed:
        if v.kind in ("symbol", "char", "decimal"):
            return _show(v)
        return f":{v.value}" if v.kind == "keyword" else v.value
    if isinstance(v, tuple):
        if len(v) == 2 and v[0] == "__map__":
            return {str(_show(k)): thaw(x) for k, x in v[1]}
        return [thaw(x) for x in v]
    if isinstance(v, frozenset):
        return sorted((thaw(x) for x in v), key=repr)
    return v


def _out(typ: OpType | None, value: JSONValue) -> object:
    return freeze(value) if typ is OpType.OK else UNKNOWN


def _show(v: object) -> str:
    """A value as EDN text (``nil``, ``:y``, ``"a"``, ``[1 2]``), for summaries and evidence."""
    if v is None:
        return "nil"
    if type(v) is Typed:
        if v.kind == "keyword":
            return f":{v.value}"
        if v.kind == "bool":
            return "true" if v.value else "false"
        if v.kind in ("symbol", "char", "decimal"):
            return dumps(_UNFROZEN[v.kind](v.value))
        return repr(v.value)
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "__map__":
        return "{" + ", ".join(f"{_show(k)} {_show(x)}" for k, x in v[1]) + "}"
    if isinstance(v, tuple):
        return "[" + " ".join(_show(x) for x in v) + "]"
    if isinstance(v, frozenset):
        try:
            members = sorted(v)
        except TypeError:
            members = sorted(v, key=repr)
        return "#{" + " ".join(_show(x) for x in members) + "}"
    if isinstance(v, (list, dict, bool, float, Keyword, Symbol, Char, Decimal)):
        return _show(freeze(v))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return repr(v)


# ----------------------------------------------------------------- registers

READ, WRITE, CAS = 0, 1, 2
_REGISTER_F = {"read": READ, "get": READ, "write": WRITE, "put": WRITE, "cas": CAS}


NilRead = Literal["any", "value"]
FailedCas = Literal["absent", "observed"]


_READ_INPUT: Final = (READ, None, None)  # one shared input for every read


def _register_encode(with_cas: bool, nil_read: NilRead, failed_cas: FailedCas) -> Encoder:
    # Called once per op of a history: the choices are decided here, once, and the common
    # values (integers, nil) skip freeze().
    any_nil = nil_read == "any"
    observed = with_cas and failed_cas == "observed"
    ok, fail = OpType.OK, OpType.FAIL
    codes = _REGISTER_F if with_cas else {f: c for f, c in _REGISTER_F.items() if c != CAS}

    def encode(
        f: str, v_in: JSONValue, v_out: JSONValue, typ: OpType | None
    ) -> tuple[Any, Any] | None:
        code = codes.get(f)
        if code is None:
            raise UnknownOp(f)
        if code == READ:
            if typ is ok:
                if v_out is None:
                    # Knossos: a read of nil matches every state. Always legal and changing
                    # nothing, it fits anywhere in its window: the same as dropping it.
                    return None if any_nil else (_READ_INPUT, None)
                return _READ_INPUT, (v_out if type(v_out) is int else freeze(v_out))
            return None if typ is fail else (_READ_INPUT, UNKNOWN)
        if typ is fail and not (code == CAS and observed):
            return None
        if code == WRITE:
            v = v_in if type(v_in) is int else freeze(v_in)
            return (WRITE, v, None), (None if typ is ok else UNKNOWN)
        if type(v_in) not in (list, tuple) or len(v_in) != 2:
            raise ValueError(f"cas value must be [expected new], got {_show(v_in)}")
        # A failed cas (with no error: the caller dropped those) is an observation that the
        # compare failed, as Jepsen's etcd client and Porcupine's etcd model mean it.
        out = True if typ is ok else False if typ is fail else UNKNOWN
        a, b = v_in
        return (
            CAS,
            a if type(a) is int else freeze(a),
            b if type(b) is int else freeze(b),
        ), out

    return encode


def _register_step(state: object, inp: Input, out: object) -> tuple[bool, object]:
    code = inp[0]
    if code == READ:
        return (out is UNKNOWN or out == state), state
    if code == WRITE:
        return True, inp[1]
    if state == inp[1]:
        return out is not False, inp[2]
    return out is not True, state


def _register_describe(inp: Input, out: object) -> str:
    code = inp[0]
    if code == READ:
        return f"read() -> {'?' if out is UNKNOWN else _show(out)}"
    if code == WRITE:
        return f"write({_show(inp[1])})" + (" -> ?" if out is UNKNOWN else "")
    res = "?" if out is UNKNOWN else ("ok" if out else "fail")
    return f"cas({_show(inp[1])}, {_show(inp[2])}) -> {res}"


def _is_read(inp: Input, out: object) -> bool:
    return bool(inp[0] == READ)


def _register_read_only(inp: Input, out: object) -> bool:
    return bool(inp[0] == READ or (inp[0] == CAS and out is False))


def register(init: JSONValue = None, *, nil_read: NilRead = "value") -> Model:
    """A read/write register (``f`` read or write; ``get``/``put`` also accepted).

    ``init`` is the value before any write (nil: absent). ``nil_read="any"`` is Knossos': a
    read that returned nil matches every state; ``"value"`` (Porcupine's) reads it as the
    register holding nil (absent).
    """
    return Model(
        name="register",
        init=freeze(init),
        step=_register_step,
        encode=_register_encode(False, nil_read, "absent"),
        read_only=_register_read_only,
        describe=_register_describe,
        register=RegisterSpec(False, nil_read, "absent"),
    )


def cas_register(
    init: JSONValue = None, *, nil_read: NilRead = "value", failed_cas: FailedCas = "observed"
) -> Model:
    """A register with compare-and-set (``cas`` value ``[expected new]``), Knossos' cas-register.

    ``failed_cas="observed"`` (Porcupine's etcd model) keeps a ``fail`` cas with no error as
    the observation that the compare failed; ``"absent"`` (Knossos) drops it as an op that did
    not happen. ``init`` and ``nil_read`` as in :func:`register`.
    """
    return Model(
        name="cas-register",
        init=freeze(init),
        step=_register_step,
        encode=_register_encode(True, nil_read, failed_cas),
        read_only=_register_read_only,
        describe=_register_describe,
        register=RegisterSpec(True, nil_read, failed_cas),
    )


# ----------------------------------------------------------------------- kv

GET, PUT, APPEND = 0, 1, 2
_KV_F = {"get": GET, "read": GET, "put": PUT, "write": PUT, "append": APPEND}
_EMPTY = ("", ())


def _kv_encode(nil_read: NilRead) -> Encoder:
    def encode(
        f: str, v_in: JSONValue, v_out: JSONValue, typ: OpType | None
    ) -> tuple[Any, Any] | None:
        code = _KV_F.get(f)
        if code is None:
            raise UnknownOp(f)
        if typ is OpType.FAIL:
            return None
        if code == GET:
            if v_out is None and nil_read == "any" and typ is OpType.OK:
                return None  # Knossos' nil read: matches every state (see register)
            return (GET, None), _out(typ, v_out)
        return (code, freeze(v_in)), (None if typ is OpType.OK else UNKNOWN)

    return encode


def _kv_step(state: object, inp: Input, out: object) -> tuple[bool, object]:
    code = inp[0]
    if code == GET:
        if out is UNKNOWN or out == state:
            return True, state
        # An absent key reads as nil in some stores and as the empty value in others.
        return (state is None and out in _EMPTY), state
    if code == PUT:
        return True, inp[1]
    v = inp[1]
    if state is None:
        return True, (v if isinstance(v, str) else (v,))
    if isinstance(state, str) and isinstance(v, str):
        return True, state + v
    if isinstance(state, tuple):
        return True, (*state, v)
    return False, state


def _kv_describe(inp: Input, out: object) -> str:
    code = inp[0]
    if code == GET:
        return f"get() -> {'?' if out is UNKNOWN else _show(out)}"
    name = "put" if code == PUT else "append"
    return f"{name}({_show(inp[1])})" + (" -> ?" if out is UNKNOWN else "")


def kv(init: JSONValue = None, *, nil_read: NilRead = "value") -> Model:
    """A key-value store: get, put and append on each key (keys checked independently).

    ``append`` concatenates strings (Porcupine's kv) or adds an element to a list (Jepsen's
    append); an absent key reads as nil, ``""`` or ``[]``. ``init`` is every key's value before
    its first put (nil: absent); ``nil_read`` as in :func:`register`.
    """
    return Model(
        name="kv",
        init=freeze(init),
        step=_kv_step,
        encode=_kv_encode(nil_read),
        read_only=lambda inp, out: bool(inp[0] == GET),
        describe=_kv_describe,
    )


# ---------------------------------------------------------------------- set

ADD = 3  # distinct from READ: set and counter inputs are (ADD, x) or (READ, None)
_SET_F = {"add": ADD, "read": READ}


def _set_encode(
    f: str, v_in: JSONValue, v_out: JSONValue, typ: OpType | None
) -> tuple[Any, Any] | None:
    code = _SET_F.get(f)
    if code is None:
        raise UnknownOp(f)
    if typ is OpType.FAIL:
        return None
    if code == ADD:
        return (ADD, freeze(v_in)), (None if typ is OpType.OK else UNKNOWN)
    if typ is not OpType.OK:
        return (READ, None), UNKNOWN
    if not isinstance(v_out, (list, tuple, set, frozenset)):
        raise ValueError(f"set read must return a collection, got {v_out!r}")
    return (READ, None), frozenset(freeze(x) for x in v_out)


def _set_step(state: frozenset[Hashable], inp: Input, out: object) -> tuple[bool, object]:
    if inp[0] == ADD:
        return True, (state if inp[1] in state else state | {inp[1]})
    return (out is UNKNOWN or out == state), state


def _set_describe(inp: Input, out: object) -> str:
    if inp[0] == ADD:
        return f"add({_show(inp[1])})" + (" -> ?" if out is UNKNOWN else "")
    return f"read() -> {'?' if out is UNKNOWN else _show(out)}"


def set_model() -> Model:
    """A set with ``add x`` and ``read`` (returns every member)."""
    return Model(
        name="set",
        init=frozenset(),
        step=_set_step,
        encode=_set_encode,
        read_only=_is_read,
        describe=_set_describe,
    )


# -------------------------------------------------------------------- queue

ENQ, DEQ = 0, 1
_QUEUE_F = {"enqueue": ENQ, "dequeue": DEQ}


def _queue_encode(
    f: str, v_in: JSONValue, v_out: JSONValue, typ: OpType | None
) -> tuple[Any, Any] | None:
    code = _QUEUE_F.get(f)
    if code is None:
        raise UnknownOp(f)
    if typ is OpType.FAIL:
        return None
    if code == ENQ:
        return (ENQ, freeze(v_in)), (None if typ is OpType.OK else UNKNOWN)
    return (DEQ, None), _out(typ, v_out)


def _queue_step(state: tuple[Hashable, ...], inp: Input, out: object) -> tuple[bool, object]:
    if inp[0] == ENQ:
        return True, (*state, inp[1])
    if out is UNKNOWN:
        return True, state[1:]
    if not state:
        return out is None, state
    return out == state[0], state[1:]


def _queue_describe(inp: Input, out: object) -> str:
    if inp[0] == ENQ:
        return f"enqueue({_show(inp[1])})" + (" -> ?" if out is UNKNOWN else "")
    return f"dequeue() -> {'?' if out is UNKNOWN else _show(out)}"


def queue() -> Model:
    """A FIFO queue: ``enqueue x``; ``dequeue`` returns the head, or nil when empty."""
    return Model(
        name="queue",
        init=(),
        step=_queue_step,
        encode=_queue_encode,
        read_only=lambda inp, out: False,
        describe=_queue_describe,
    )


# ------------------------------------------------------------------ counter

_COUNTER_F = {"add": ADD, "increment": ADD, "inc": ADD, "read": READ}


def _counter_encode(
    f: str, v_in: JSONValue, v_out: JSONValue, typ: OpType | None
) -> tuple[Any, Any] | None:
    code = _COUNTER_F.get(f)
    if code is None:
        raise UnknownOp(f)
    if typ is OpType.FAIL:
        return None
    if code == ADD:
        n = 1 if v_in is None else v_in
        if not isinstance(n, (int, float)) or isinstance(n, bool):
            raise ValueError(f"counter add needs a number, got {v_in!r}")
        return (ADD, n), (None if typ is OpType.OK else UNKNOWN)
    if typ is OpType.OK and type(v_out) in (int, float):
        return (READ, None), v_out  # counts compare as numbers: the state is a sum
    return (READ, None), _out(typ, v_out)


def _counter_step(state: int | float, inp: Input, out: object) -> tuple[bool, object]:
    if inp[0] == ADD:
        return True, state + inp[1]
    return (out is UNKNOWN or out == state), state


def _counter_describe(inp: Input, out: object) -> str:
    if inp[0] == ADD:
        return f"add({_show(inp[1])})" + (" -> ?" if out is UNKNOWN else "")
    return f"read() -> {'?' if out is UNKNOWN else _show(out)}"


def counter(init: int | float = 0) -> Model:
    """A counter: ``add n`` (``increment`` adds 1) and ``read``; ``init`` is its starting value."""
    if not isinstance(init, (int, float)) or isinstance(init, bool):
        raise ValueError(f"a counter starts at a number, not {_show(init)}")
    return Model(
        name="counter",
        init=init,
        step=_counter_step,
        encode=_counter_encode,
        read_only=_is_read,
        describe=_counter_describe,
    )


MODELS: dict[str, Callable[[], Model]] = {
    "register": register,
    "cas-register": cas_register,
    "kv": kv,
    "set": set_model,
    "queue": queue,
    "counter": counter,
}

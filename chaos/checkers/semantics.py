"""Which tool's reading of a history to follow: Knossos' or Porcupine's, or a mix.

The two reference checkers agree on linearizability and disagree on three details of the
register models, each of which can flip a verdict:

* ``init``: Jepsen's register tests check with ``(cas-register 0)``, a register that starts at
  0; Porcupine's etcd model starts it absent (nil).
* ``nil_read``: in Knossos a read whose value is nil matches any state (the value is unknown);
  in Porcupine it is a read that found the register absent.
* ``failed_cas``: Knossos drops every ``:fail`` op (it did not happen); Porcupine's etcd model
  keeps a failed cas as the observation that the compare failed.

A :class:`Semantics` holds the three; :func:`semantics` builds one from a preset name and
overrides, and :func:`build_model` gives the linearizability model for a ``--model`` name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, get_args

from chaos.checkers.models import (
    FailedCas,
    Model,
    NilRead,
    _show,
    cas_register,
    counter,
    freeze,
    kv,
    queue,
    register,
    set_model,
    thaw,
)
from chaos.histories.ops import JSONValue

__all__ = [
    "DEFAULT_SEMANTICS",
    "PRESETS",
    "Semantics",
    "build_model",
    "counter_start",
    "semantics",
]

DEFAULT_SEMANTICS: Final = "porcupine"


@dataclass(frozen=True, slots=True, kw_only=True)
class Semantics:
    """``preset`` names what the rest started from; ``custom`` is True when an option changed
    one of them. ``init`` is the registers' (and kv keys') starting value; the counter starts at
    it too when it is a number, else at 0."""

    preset: str
    init: JSONValue  # decoded from --init or a preset's, frozen
    nil_read: NilRead
    failed_cas: FailedCas
    custom: bool = False
    init_given: bool = False  # --init was said: kv keys and the counter start there too

    @property
    def name(self) -> str:
        return f"{self.preset} (modified)" if self.custom else self.preset

    def describe(self) -> str:
        return (
            f"{self.name}: init {_show(self.init)}, nil read matches {self.nil_read}, "
            f"failed cas {self.failed_cas}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "preset": self.preset,
            "init": thaw(self.init),
            "nil_read": self.nil_read,
            "failed_cas": self.failed_cas,
        }


PRESETS: Final[dict[str, Semantics]] = {
    "porcupine": Semantics(preset="porcupine", init=None, nil_read="value", failed_cas="observed"),
    "knossos": Semantics(preset="knossos", init=0, nil_read="any", failed_cas="absent"),
}

_UNSET: Final = object()


def semantics(
    preset: str | None = None,
    *,
    init: JSONValue = _UNSET,
    nil_read: str | None = None,
    failed_cas: str | None = None,
) -> Semantics:
    """A preset (default :data:`DEFAULT_SEMANTICS`) with any of its three choices overridden.

    Raises :class:`ValueError` on an unknown preset or choice.
    """
    name = preset or DEFAULT_SEMANTICS
    if name not in PRESETS:
        raise ValueError(f"unknown semantics {name!r}; choose one of {', '.join(PRESETS)}")
    base = PRESETS[name]
    if nil_read is not None and nil_read not in get_args(NilRead):
        raise ValueError(f"--nil-read must be one of {', '.join(get_args(NilRead))}")
    if failed_cas is not None and failed_cas not in get_args(FailedCas):
        raise ValueError(f"--failed-cas must be one of {', '.join(get_args(FailedCas))}")
    new_init = base.init if init is _UNSET else freeze(init)
    new_nil: NilRead = base.nil_read if nil_read is None else nil_read  # type: ignore[assignment]
    new_cas: FailedCas = (
        base.failed_cas if failed_cas is None else failed_cas  # type: ignore[assignment]
    )
    custom = (new_init, new_nil, new_cas) != (base.init, base.nil_read, base.failed_cas)
    return Semantics(
        preset=name,
        init=new_init,
        nil_read=new_nil,
        failed_cas=new_cas,
        custom=custom,
        init_given=init is not _UNSET,
    )


def counter_start(sem: Semantics) -> float:
    """The counter's starting value: ``--init`` when given (a number), else 0."""
    if not sem.init_given:
        return 0
    v = thaw(sem.init)
    if type(v) is int or type(v) is float:
        return v
    raise ValueError(f"a counter starts at a number, not {_show(sem.init)}")


def build_model(name: str, sem: Semantics) -> Model:
    """The linearizability model ``name`` (see :data:`chaos.checkers.models.MODELS`) under
    ``sem``. Models without a register (set, queue) take none of its choices."""
    if name == "register":
        return register(sem.init, nil_read=sem.nil_read)
    if name == "cas-register":
        return cas_register(sem.init, nil_read=sem.nil_read, failed_cas=sem.failed_cas)
    if name == "kv":
        # The presets' init is a register's; a kv key starts absent unless --init says so.
        return kv(sem.init if sem.init_given else None, nil_read=sem.nil_read)
    if name == "counter":
        return counter(counter_start(sem))
    if name == "set":
        return set_model()
    if name == "queue":
        return queue()
    raise ValueError(f"no linearizability model named {name!r}")

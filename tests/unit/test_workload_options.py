"""Each workload declares its ``-o`` options once (chaos.core.options): the validator turns the
given text into typed values or refuses it naming the option, the value and what is accepted."""

from __future__ import annotations

import pytest

from chaos.core.capabilities import WorkloadOptions, options_of
from chaos.core.options import WorkloadOption, parse
from chaos.core.spec import TestSpec
from chaos.workloads import registry

DECLARED = (
    WorkloadOption("size", int, 3, "how many", low=1, high=3),
    WorkloadOption("wait", float, 0.5, "seconds", low=0),
    WorkloadOption("mode", str, "safe", "how", choices=("safe", "unsafe")),
    WorkloadOption("label", str, None, "a name"),
)


def test_values_are_typed_and_defaults_filled_in() -> None:
    assert parse("w", DECLARED, {}) == {"size": 3, "wait": 0.5, "mode": "safe"}
    got = parse("w", DECLARED, {"size": "2", "wait": "1.5", "mode": "unsafe", "label": "x"})
    assert got == {"size": 2, "wait": 1.5, "mode": "unsafe", "label": "x"}
    assert isinstance(got["size"], int) and isinstance(got["wait"], float)
    # a YAML scalar (the grade matrix) is checked the same way as its text
    assert parse("w", DECLARED, {"size": 1, "wait": 0})["wait"] == 0.0


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"sise": "2"},
            "w has no option sise; did you mean size?; options: size, wait, mode, label",
        ),
        ({"colour": "2"}, "w has no option colour; options: size, wait, mode, label"),
        ({"size": "4"}, "w option size=4: expected 1, 2 or 3"),
        ({"size": "0"}, "w option size=0: expected 1, 2 or 3"),
        ({"size": "2.5"}, "w option size=2.5: expected 1, 2 or 3"),
        ({"wait": "-1"}, "w option wait=-1: expected a number >= 0"),
        ({"wait": "nan"}, "w option wait=nan: expected a number >= 0"),
        ({"wait": "soon"}, "w option wait=soon: expected a number >= 0"),
        ({"mode": "SAFE"}, "w option mode=SAFE: expected safe or unsafe"),
    ],
)
def test_a_bad_option_is_refused_naming_it_its_value_and_what_is_accepted(
    given: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError) as e:
        parse("w", DECLARED, given)
    assert str(e.value) == message


def test_a_workload_without_options_refuses_any() -> None:
    with pytest.raises(ValueError, match="w has no option x; options: none"):
        parse("w", (), {"x": "1"})


def test_a_declaration_must_be_coherent() -> None:
    with pytest.raises(TypeError, match="kind must be int, float or str"):
        WorkloadOption("x", list, None, "")
    with pytest.raises(TypeError, match="choices are words"):
        WorkloadOption("x", int, None, "", choices=("1",))


@pytest.mark.parametrize("name", sorted(registry.BUILTIN))
def test_every_shipped_workload_declares_its_options_and_checks_them(name: str) -> None:
    """Every workload declares (possibly no) options, and its preflight refuses an unknown one
    rather than ignoring it."""
    wl = registry.get(name)
    assert isinstance(wl, WorkloadOptions), name
    for o in options_of(wl):
        assert o.help.strip(), f"{name}: option {o.name} has no help"
    with pytest.raises(ValueError, match=f"{name} has no option nosuch"):
        wl.preflight(TestSpec(workload=name, options={"nosuch": "1"}))


def test_lab1_options_reach_the_services_typed() -> None:
    from chaos.workloads.lab1.workload import Lab1

    wl = Lab1()
    assert wl.nights(TestSpec(workload="lab1", options={"nights": "7"})) == 7
    assert wl.nights(TestSpec(workload="lab1", tasks=5)) == 5
    with pytest.raises(ValueError, match="lab1 option renew=-2: expected a number >= 0"):
        wl.preflight(TestSpec(workload="lab1", options={"renew": "-2"}))


def test_lab1_sets_the_services_variables_of_every_option_given_or_declared() -> None:
    """The service keeps no default of its own for a lab option: every declared option becomes
    its variable (a float's text), the declared default where none was given; cron mode adds
    the shared epoch. A service started without one refuses to start, naming it."""
    from types import SimpleNamespace
    from typing import Any, cast

    from chaos.workloads.lab1 import service
    from chaos.workloads.lab1.workload import OPTION_ENV, OPTIONS, Lab1

    def env(**options: str) -> dict[str, str]:
        ctx: Any = SimpleNamespace(spec=TestSpec(workload="lab1", options=options), state={})
        return Lab1().option_env(cast(Any, ctx))

    defaults = {o.name: o.default for o in OPTIONS}
    assert env() == {var: str(defaults[key]) for key, var in OPTION_ENV.items()}
    assert env()["CHAOS_LAB1_LOCK_AT_MOST"] == "30.0"
    given = env(lock_at_least="20", renew="2")
    assert given["CHAOS_LAB1_LOCK_AT_LEAST"] == "20.0" and given["CHAOS_LAB1_RENEW"] == "2.0"
    assert given["CHAOS_LAB1_JOB"] == "3.0"
    cron = env(cron="25")
    assert cron["CHAOS_LAB1_CRON"] == "25.0"
    assert {"CHAOS_LAB1_EPOCH", "CHAOS_LAB1_WALL_BASE"} <= set(cron)
    with pytest.MonkeyPatch.context() as mp:
        for var, value in env().items():
            mp.setenv(var, value)
        settings = service.Settings.from_env()
        assert (settings.job, settings.at_most, settings.at_least) == (3.0, 30.0, 2.0)
        mp.delenv("CHAOS_LAB1_JOB")
        with pytest.raises(SystemExit, match="CHAOS_LAB1_JOB is required"):
            service.Settings.from_env()
    assert "CHAOS_LAB1_EPOCH" not in env(cron="0")

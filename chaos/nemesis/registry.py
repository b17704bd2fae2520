"""Nemeses by name, as the CLI and specs spell them."""

from __future__ import annotations

from typing import Any

from chaos.orchestrator.spec import TestSpec


def make_nemesis(name: str, wl: Any, spec: TestSpec) -> Any:
    from chaos.nemesis.faultpoint import FaultPointNemesis
    from chaos.nemesis.pause import PauseNemesis

    points = getattr(wl, "fault_points", {})
    if name in points:
        component, crashes = points[name]
        return FaultPointNemesis(
            name, component=component, crashes=crashes, observe=getattr(wl, "observe", None)
        )
    if name == "pause":
        duration = spec.pause_duration or spec.ack_wait + 3.0
        once = spec.tasks is None and spec.rate is None
        return PauseNemesis(
            wl.pause_target, duration=duration, interval=spec.nemesis_interval, once=once
        )
    known = ["pause", *points]
    raise ValueError(f"unknown nemesis {name!r} for {spec.lab}; known: {', '.join(known)}")

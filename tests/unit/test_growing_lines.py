"""The one reader of growing line files (chaos.histories.growing), used by the host's event tail
and the SSH backend's collector."""

from __future__ import annotations

from chaos.histories.growing import GrowingLines


def test_a_line_cut_between_two_chunks_arrives_whole_once_ended() -> None:
    g: GrowingLines[str] = GrowingLines()
    assert g.feed("f", b'{"a": 1}\n{"b"') == ([b'{"a": 1}'], False)
    assert g.offset("f") == 13
    assert g.feed("f", b": 2}\n") == ([b'{"b": 2}'], False)
    assert g.offset("f") == 18
    # files are kept apart
    assert g.feed("g", b"x\n") == ([b"x"], False) and g.offset("g") == 2


def test_an_unended_line_past_the_cap_is_dropped_and_said() -> None:
    g: GrowingLines[str] = GrowingLines(cap=8)
    assert g.feed("f", b"ok\n" + b"y" * 9) == ([b"ok"], True)
    # the rest of that line arrives as a fragment, never glued to what was dropped
    assert g.feed("f", b"yy\nnext\n") == ([b"yy", b"next"], False)
    assert g.offset("f") == 3 + 9 + 8


def test_without_a_cap_nothing_is_dropped() -> None:
    g: GrowingLines[str] = GrowingLines()
    assert g.feed("f", b"y" * 100) == ([], False)
    assert g.feed("f", b"\n") == ([b"y" * 100], False)

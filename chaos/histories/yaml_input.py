"""YAML documents chaos reads (a grade matrix, a nodes file): composed only after a flat walk.

PyYAML composes recursively, so a document nested a few thousand levels deep (``[[[[...``) ends
in RecursionError; the event stream is flat, so walking it first bounds the depth before any
recursion. Aliases can be refused as well (a "billion laughs" document expands exponentially
once read as data). What is wrong is an :class:`~chaos.histories.limits.InputError` naming the
file and line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from chaos.histories.limits import InputError

# a matrix or a nodes file nests four or five levels
MAX_YAML_DEPTH = 20


def compose(
    path: Path, text: str, *, max_depth: int = MAX_YAML_DEPTH, aliases: bool = True
) -> yaml.Node | None:
    """The document's node tree, or None for an empty one; InputError for anything unsafe or
    not YAML (the caller's own error type can wrap ``str(e)``)."""
    try:
        depth = 0
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            line = ev.start_mark.line + 1 if ev.start_mark else None
            if isinstance(ev, yaml.AliasEvent) and not aliases:
                raise InputError(path, f"alias *{ev.anchor}: aliases are not allowed", line=line)
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    raise InputError(path, f"nested deeper than {max_depth} levels", line=line)
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else None
        raise InputError(path, f"not valid YAML: {e.problem}", line=line) from None
    except yaml.YAMLError as e:  # the reader's own errors (a control character) carry no mark
        raise InputError(path, f"not valid YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise InputError(path, "nested deeper than chaos reads") from None

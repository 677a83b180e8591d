"""Key paths into a config: "optimizers.generator.lr", "loss.penalties[0].gamma",
"loss.terms[1].lambda_real", "optimizers.generator.lr.from" (a schedule's entry).

A path is dot-separated names, each optionally followed by list indices. Setting a key creates
missing objects on the way (as gan_train's --set does); a list entry must exist, since a sweep
changes entries of the base config's lists and does not invent them.
"""
from __future__ import annotations

import copy
import re
from typing import Any, Union

Segment = Union[str, int]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX = re.compile(r"\[(\d+)\]")


class KeyPathError(ValueError):
    """A key path that does not parse, or does not fit the config it is applied to."""


def parse_key_path(path: str) -> list[Segment]:
    """["loss", "penalties", 0, "gamma"] for "loss.penalties[0].gamma"."""
    if not isinstance(path, str) or not path:
        raise KeyPathError(f"expected a key path such as \"optimizers.generator.lr\", found {path!r}")
    segments: list[Segment] = []
    for part in path.split("."):
        name = _NAME.match(part)
        if not name:
            raise KeyPathError(f"{path}: expected names joined by dots, each optionally followed by [index], "
                               f"found the part {part!r}")
        segments.append(name.group(0))
        rest = part[name.end():]
        while rest:
            index = _INDEX.match(rest)
            if not index:
                raise KeyPathError(f"{path}: expected [index] after {name.group(0)!r}, found {rest!r}")
            segments.append(int(index.group(1)))
            rest = rest[index.end():]
    return segments


def _describe_entries(entries: list) -> str:
    types = [e.get("type", "?") if isinstance(e, dict) else type(e).__name__ for e in entries]
    return f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}" + (f": {', '.join(map(str, types))}" if types else "")


def set_key(config: dict, path: str, value: Any) -> dict:
    """A copy of `config` with the key at `path` set to `value`."""
    out = copy.deepcopy(config)
    segments = parse_key_path(path)
    node: Any = out
    walked = ""
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if isinstance(segment, int):
            if not isinstance(node, list):
                raise KeyPathError(f"{path}: expected a list at {walked}, found {type(node).__name__} {node!r}")
            if segment >= len(node):
                raise KeyPathError(f"{path}: expected an index below {len(node)} ({walked} holds "
                                   f"{_describe_entries(node)}), found {segment}")
            if last:
                node[segment] = value
            else:
                node = node[segment]
            walked += f"[{segment}]"
            continue
        if not isinstance(node, dict):
            raise KeyPathError(f"{path}: expected an object at {walked or 'the top level'}, found "
                               f"{type(node).__name__} {node!r}")
        if last:
            node[segment] = value
        else:
            if node.get(segment) is None:
                if isinstance(segments[i + 1], int):
                    raise KeyPathError(f"{path}: expected a list at {walked + '.' if walked else ''}{segment}, found none")
                node[segment] = {}
            node = node[segment]
        walked += ("." if walked else "") + segment
    return out


def get_key(config: dict, path: str, default: Any = None) -> Any:
    """The value at `path`, or `default` where the path leads nowhere."""
    node: Any = config
    for segment in parse_key_path(path):
        if isinstance(segment, int):
            if not isinstance(node, list) or segment >= len(node):
                return default
        elif not isinstance(node, dict) or segment not in node:
            return default
        node = node[segment]
    return node

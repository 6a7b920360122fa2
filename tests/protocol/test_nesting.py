"""The nesting measure that runs before the JSON parser: exact on JSON, linear on anything."""

from __future__ import annotations

import json
import random
import re

import pytest

from mcpsync.protocol import decoding


def _json_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_json_depth(v) for v in value), default=0)
    return 0


def _random_value(rng: random.Random, levels: int) -> object:
    kind = rng.randrange(6 if levels else 3)
    if kind == 0:
        return rng.choice(['a"[{', "\\]}", "", "x" * rng.randrange(5), "\u00e9\\\"[", 3, None])
    if kind in (1, 2):
        return rng.random()
    if kind == 3:
        return [_random_value(rng, levels - 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["k", "[", '"}', "\\"]) + str(i): _random_value(rng, levels - 1)
            for i in range(rng.randrange(4))}


def _reference_prune(text: str, keep: int) -> str | None:
    """The plain token-by-token version (slow in Python, obviously right)."""
    out: list[str] = []
    copied = level = 0
    cut: int | None = None
    for match in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', text, re.S):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            level += 1
            if level == keep + 1 and cut is None:
                out.append(text[copied:match.start()])
                out.append("0")
                cut = match.start()
        else:
            if level == keep + 1 and cut is not None:
                cut = None
                copied = match.end()
            level -= 1
    if cut is not None:
        return None
    out.append(text[copied:])
    return "".join(out)


@pytest.mark.parametrize("seed", range(300))
def test_depth_and_prune_agree_with_the_parser_on_json(seed):
    rng = random.Random(seed)
    value = _random_value(rng, rng.randrange(1, 9))
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    depth = _json_depth(value)
    assert text.count("[") + text.count("{") >= depth  # deeper_than's first bound
    for limit in range(0, 10):
        assert decoding.deeper_than(text, limit) == (depth > limit), (text, limit)
    for keep in range(0, 9):
        pruned = decoding.prune(text, keep)
        assert pruned == _reference_prune(text, keep)
        assert pruned is not None
        assert _json_depth(json.loads(pruned)) == min(_json_depth(value), keep)


@pytest.mark.parametrize("seed", range(300))
def test_prune_matches_the_plain_version_on_any_text(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice('[]{}"\\ ,:1a') for _ in range(rng.randrange(60)))
    for keep in range(0, 5):
        pruned = decoding.prune(text, keep)
        if "\\" not in text:
            assert pruned == _reference_prune(text, keep), (text, keep)
        # What is left never takes a parser deeper than kept.
        assert pruned is None or _prefix_depth(pruned) <= keep, (text, keep)
        # Never less deep than a parser reading the text from the left could get.
        assert decoding.deeper_than(text, keep) or _prefix_depth(text) <= keep, (text, keep)


def _prefix_depth(text: str) -> int:
    """The deepest a parser could get in ``text``: it stops at a backslash outside a string
    at the latest."""
    level = deepest = 0
    for match in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}\\]', text, re.S):
        token = match.group()
        if token == "\\":
            break
        if token in "[{":
            level += 1
            deepest = max(deepest, level)
        elif token in "]}":
            level -= 1
    return deepest


def test_a_cut_spanning_strings_and_pieces():
    text = '{"a":[[1,"]]"],{"b":[2]}],"c":"[["}'
    assert decoding.prune(text, 1) == '{"a":0,"c":"[["}'
    assert decoding.prune(text, 2) == '{"a":[0,0],"c":"[["}'
    assert decoding.prune("[[" * 10 + "]]" * 10, 3) == "[[[0]]]"
    assert decoding.prune("[[[", 1) is None
    assert not decoding.deeper_than('"[[[" [ "\\"[" ]', 1)
    assert decoding.deeper_than('["]",["]",["]",1,"["],"["],"["]', 2)  # strings hide nothing

"""Large catalogues: change a tool without rewriting it (:func:`transform_tool`), and let a
model find tools by searching instead of reading hundreds of them (:func:`enable_search`).

A generated server easily has two hundred tools, and a model given two hundred tool
descriptions picks worse and pays for every one in its context. Two remedies:

* :func:`transform_tool` renames a tool, gives it a better description, renames, re-describes,
  gives a default to, or hides one of its arguments (a hidden argument is always sent with
  its fixed value, or left out), or wraps its call (``wrap(ctx, arguments, call_next)``: check
  or change the arguments, post-process the result). The new tool replaces the old one and
  still calls it, with its own arguments validated first.
* :func:`enable_search` makes ``tools/list`` answer two tools only: ``search_tools`` (the
  best matches for a query in words) and ``call_tool`` (call one of them by name). The
  tools stay registered; a client that already knows a name may still call it. Matches are
  ranked with Okapi BM25 (an implementation of our own, below: the formula is twenty lines
  and the packages that offer it bring numpy or an unmaintained release), over each tool's
  name (split at ``_``, ``-``, ``.`` and camelCase), title, description and argument names
  and descriptions. A tool the caller's principal lacks the scopes for is neither found nor
  called.
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..codec import from_wire
from ..dispatch.context import HandlerContext
from ..dispatch.typed import ToolBinding
from ..server.scopes import permits
from ..server.tools import RegisteredTool
from ..types.tools import CallToolResult

if TYPE_CHECKING:
    from ..server.server import ServerCore

__all__ = ["BM25", "ArgTransform", "enable_search", "transform_tool"]

_MISSING: Final[Any] = object()
SEARCH_TOOL: Final = "search_tools"
CALL_TOOL: Final = "call_tool"
#: Most matches one search answers.
MAX_SEARCH_RESULTS: Final = 50


@dataclass(frozen=True)
class ArgTransform:
    """How one argument changes: ``name`` (a new name), ``description``, ``default`` (the
    argument becomes optional), ``hide`` (gone from the schema; ``default``, when given, is
    always sent)."""

    name: str | None = None
    description: str | None = None
    default: Any = _MISSING
    hide: bool = False


Wrap = Callable[[HandlerContext, dict[str, Any], Callable[[dict[str, Any]], Any]], Any]


def transform_tool(server: ServerCore, name: str, *, new_name: str | None = None,
                   description: str | None = None,
                   arguments: Mapping[str, ArgTransform] | None = None,
                   wrap: Wrap | None = None) -> str:
    """Replace the tool ``name`` with its transformed self (see the module doc); returns
    the new tool's name. ``KeyError`` for an unknown tool, ``ValueError`` for an argument
    it does not have or a new name that clashes."""
    tool = server.tools.get(name)
    if tool is None:
        raise KeyError(name)
    schema = copy.deepcopy(tool.description.get("inputSchema", {"type": "object"}))
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = list(schema.get("required", []))
    changes = dict(arguments or {})
    for old in changes:
        if old not in properties:
            raise ValueError(f"tool {name!r} has no argument {old!r}")
    renamed: dict[str, str] = {}  # new name -> old name
    defaults: dict[str, Any] = {}  # old name -> value, sent when the caller gives none
    fixed: dict[str, Any] = {}  # old name -> value, always sent
    rebuilt: dict[str, Any] = {}
    for old, prop in properties.items():
        change = changes.get(old)
        if change is None:
            rebuilt[old] = prop
            continue
        if change.hide:
            if old in required and change.default is _MISSING:
                raise ValueError(f"tool {name!r}: the required argument {old!r} can be hidden "
                                 "only with a default to send")
            if change.default is not _MISSING:
                fixed[old] = change.default
            required = [r for r in required if r != old]
            continue
        prop = dict(prop) if isinstance(prop, dict) else {}
        if change.description is not None:
            prop["description"] = change.description
        if change.default is not _MISSING:
            prop["default"] = change.default
            defaults[old] = change.default
            required = [r for r in required if r != old]
        new = change.name or old
        if new in rebuilt or (new != old and new in properties and new not in changes):
            raise ValueError(f"tool {name!r}: two arguments would be named {new!r}")
        rebuilt[new] = prop
        renamed[new] = old
        required = [new if r == old else r for r in required]
    schema["properties"] = rebuilt
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    target = tool.binding

    def call(ctx: HandlerContext, **given: Any) -> Any:
        mapped = {renamed.get(k, k): v for k, v in given.items()}
        for key, value in defaults.items():
            mapped.setdefault(key, copy.deepcopy(value))
        for key, value in fixed.items():
            mapped[key] = copy.deepcopy(value)

        def call_next(values: dict[str, Any]) -> Any:
            return target.call(values, ctx)

        result = wrap(ctx, mapped, call_next) if wrap is not None else call_next(mapped)
        if isinstance(result, dict) and isinstance(result.get("content"), list):
            return from_wire(CallToolResult, result)
        return result

    final = new_name or name
    text = description if description is not None else tool.description.get("description")
    binding = ToolBinding.from_function(call, name=final, description=text or "",
                                        structured_output=False,
                                        context_type=HandlerContext, input_schema=schema)
    wire = {**tool.description, "name": final, "inputSchema": schema}
    if text:
        wire["description"] = text
    if final != name and final in server.tools:
        raise ValueError(f"a tool named {final!r} is already registered")
    server.tools.remove(name)
    server.tools.add(RegisteredTool(binding, wire, scopes=tool.scopes))
    return final


# -- search --------------------------------------------------------------------------------

_WORD: Final = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+|[a-z]+")
_STOP: Final = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of",
     "on", "or", "that", "the", "this", "to", "with"])


def tokens(text: str) -> list[str]:
    """Lower-case words of ``text``: split at anything not a letter or digit and at
    camelCase humps; a few English function words dropped; plurals made singular (the
    first step of Porter's stemmer: ``refunds`` finds ``refund``)."""
    return [_singular(w) for w in (m.group(0).lower() for m in _WORD.finditer(text))
            if w not in _STOP]


def _singular(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us")) and len(word) > 3:
        return word[:-1]
    return word


class BM25:
    """Okapi BM25 over a fixed list of documents (``k1`` = 1.2, ``b`` = 0.75; the idf of
    Lucene's variant, never negative, so a word found in most tools still counts a little)."""

    def __init__(self, documents: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.frequencies = [Counter(d) for d in documents]
        self.lengths = [len(d) for d in documents]
        count = len(documents)
        self.average = (sum(self.lengths) / count) if count else 0.0
        holding: Counter[str] = Counter()
        for document in documents:
            holding.update(set(document))
        self.idf = {word: math.log(1 + (count - n + 0.5) / (n + 0.5))
                    for word, n in holding.items()}

    def scores(self, query: list[str]) -> list[float]:
        out = []
        for frequencies, length in zip(self.frequencies, self.lengths, strict=True):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / self.average) if self.average \
                else self.k1
            for word in query:
                f = frequencies.get(word)
                if f:
                    score += self.idf[word] * f * (self.k1 + 1) / (f + norm)
            out.append(score)
        return out


def _text_of(description: Mapping[str, Any]) -> str:
    parts = [str(description.get("name", "")), str(description.get("title", "")),
             str(description.get("description", ""))]
    schema = description.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for arg, prop in properties.items():
            parts.append(str(arg))
            if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
                parts.append(prop["description"])
    return " ".join(parts)


class _Index:
    """The BM25 index of the registered tools, rebuilt when the set of tools changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, ...] = ()
        self._tools: list[RegisteredTool] = []
        self._bm25 = BM25([])

    def search(self, server: ServerCore, query: str, limit: int,
               allowed: Callable[[RegisteredTool], bool]) -> list[tuple[RegisteredTool, float]]:
        tools = [t for t in server.tools.all() if t.name not in (SEARCH_TOOL, CALL_TOOL)]
        key = tuple(id(t) for t in tools)
        with self._lock:
            if key != self._key:
                self._bm25 = BM25([tokens(_text_of(t.description)) for t in tools])
                self._tools, self._key = tools, key
            bm25, indexed = self._bm25, self._tools
        scores = bm25.scores(tokens(query))
        ranked = sorted(((score, i) for i, score in enumerate(scores) if score > 0),
                        key=lambda pair: (-pair[0], pair[1]))
        found = []
        for score, i in ranked:
            if allowed(indexed[i]):
                found.append((indexed[i], score))
                if len(found) >= limit:
                    break
        return found


def enable_search(server: ServerCore, *, max_results: int = 8) -> None:
    """Replace ``server``'s tool list with ``search_tools`` and ``call_tool`` (see the
    module doc). ``max_results``: the matches a search answers when it names no limit."""
    index = _Index()

    def search_tools(ctx: HandlerContext, query: str, limit: int = max_results) -> dict[str, Any]:
        """Find the tools that can do what you describe, best match first. Each comes with
        the arguments it takes; call one with call_tool.

        Args:
            query: what you want to do, in words ("refund an order")
            limit: how many tools to return at most
        """
        limit = max(1, min(limit, MAX_SEARCH_RESULTS))
        found = index.search(server, query, limit, lambda t: permits(ctx.auth, t.scopes))
        return {"tools": [{**{k: v for k, v in t.description.items()
                              if k in ("name", "title", "description", "inputSchema")},
                           "score": round(score, 4)} for t, score in found]}

    def call_tool(ctx: HandlerContext, name: str,
                  arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool that search_tools found, by its name, with its arguments.

        Args:
            name: the tool's name, as search_tools gave it
            arguments: the tool's arguments, as its inputSchema describes them
        """
        tool = server.tools.get(name)
        if tool is None or name in (SEARCH_TOOL, CALL_TOOL) or not permits(ctx.auth,
                                                                            tool.scopes):
            return from_wire(CallToolResult, {"content": [{"type": "text", "text": (
                f"No tool named {name!r}: search with {SEARCH_TOOL} first")}],
                "isError": True})
        return from_wire(CallToolResult, server.tools.call(
            ctx, {"name": name, "arguments": arguments or {}}, found=tool))

    server.add_tool(search_tools, name=SEARCH_TOOL,
                    annotations={"readOnlyHint": True, "openWorldHint": False})
    server.add_tool(call_tool, name=CALL_TOOL, structured_output=False)
    listed = [SEARCH_TOOL, CALL_TOOL]

    def only_search(handler: Any) -> Any:
        def tools_list(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            result = handler(ctx, {k: v for k, v in params.items() if k != "cursor"})
            kept = []
            for tool_name in listed:
                tool = server.tools.get(tool_name)
                if tool is not None:
                    kept.append(next((t for t in result.get("tools", ())
                                      if t.get("name") == tool_name), tool.description))
            return {**{k: v for k, v in result.items() if k != "nextCursor"}, "tools": kept}

        return tools_list

    server.wrap_method("tools/list", only_search)

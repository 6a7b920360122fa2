"""Typed binding: a plain function's signature becomes a tool's schemas and call path.

At registration the type hints are turned into a JSON Schema (2020-12, ``type: object`` root;
the hint-to-schema rules live in :mod:`.schema`) and one compiled validator, plus a decoder
per parameter (identity for JSON primitives) and an output schema when the return type is
structured. At call time: validate the raw arguments, decode, call, encode. Argument errors
become ``isError`` results so a model can correct itself; :class:`~mcpsync.errors.MCPError`
and cancellation propagate to the engine.

Calling the user's function (:func:`call_handler`, shared with resources and prompts, and
:func:`check_handler` at registration) lives here too. An ``async def`` tool, resource or
prompt runs to completion on the request's own handler thread, in a **private event loop
made for that one call** and closed after it. Why not one shared background loop:
everything the thread-per-request design gives a handler keeps working unchanged
(``current_transport()``, ``@server.request_scope`` state, the records
``ctx.forward_logging`` picks by thread, and 2026-07-28 questions, which must be asked from
the handler's thread), and a handler that blocks (``ctx.elicit`` waits for a person) stalls
only its own call, never the other requests' coroutines. The price: an object bound to an
event loop (an ``asyncio.Lock``, an ``aiohttp.ClientSession``) must be made inside the call,
not shared between calls. A new loop costs about 0.1 ms. Cancellation of the request
(``ctx.cancelled``) cancels the coroutine's task, so an ``await`` in progress raises
:class:`asyncio.CancelledError` inside it; the call then ends with
:class:`~mcpsync.errors.RequestCancelledError`, as ``ctx.check_cancelled()`` would.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import inspect
import json
import logging
import re
import threading
import types
import typing
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Union

from ..codec import to_wire
from ..errors import MCPError, RequestCancelledError, RequestTimeoutError
from ..protocol.tool_outcome import tool_error, tool_failed
from ..types.content import CONTENT_TYPES
from ..types.media import sniff_mime
from ..types.tools import CallToolResult
from .fastcheck import SchemaValidator
from .schema import (
    _NONE_TYPE,
    Decoder,
    SchemaBuilder,
    _set_default,
    to_json_value,
)
from .schema_extras import field_default, is_field_info, is_model

if TYPE_CHECKING:
    import asyncio

    import jsonschema

    from .context import HandlerContext

logger = logging.getLogger("mcpsync.tools")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields):\s*$")
_NUMPY_SECTIONS = {"Parameters", "Other Parameters", "Returns", "Yields", "Receives", "Raises",
                   "Warns", "Warnings", "See Also", "Notes", "References", "Examples",
                   "Attributes", "Methods"}
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_REST_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_REST_PARAM = {"param", "parameter", "arg", "argument", "key", "keyword"}


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The description (text before the first section) and per-argument texts.

    Three styles are read: Google (``Args:`` then ``name: text``), NumPy (``Parameters``
    underlined with dashes, then ``name : type`` and the text indented below) and reST
    (``:param name: text``, also ``:param type name: text``).
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    shared: dict[str, list[str]] = {}  # NumPy's "x, y : float": one text for both
    section: str | None = None
    current: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        following = lines[index] if index < len(lines) else ""
        if line.strip() in _NUMPY_SECTIONS and _NUMPY_UNDERLINE.match(following):
            section, current = "numpy:" + line.strip(), None
            index += 1
            continue
        match = _ARGS_SECTION.match(line)
        if match:
            section, current = match.group(1), None
            continue
        field = _REST_FIELD.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if field:
            section, current = "rest", None
            words = (field.group(2) or "").split()
            if field.group(1) in _REST_PARAM and words:
                current = words[-1]
                params[current] = field.group(3).strip()
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            item = re.match(r"^\s+(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
            if item:
                current = item.group(1)
                params[current] = item.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
        elif section in ("numpy:Parameters", "numpy:Other Parameters"):
            item = re.match(r"^(\*{0,2}[\w, *]+?)\s*(?::.*)?$", line)
            if line.strip() and not line[:1].isspace() and item:
                names = [n.strip() for n in item.group(1).split(",")]
                current = names[0]
                params[current] = ""
                shared[current] = names[1:]
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "rest" and current and line[:1].isspace() and line.strip():
            params[current] += " " + line.strip()
    for first, others in shared.items():
        for name in others:
            params[name] = params[first]
    text = "\n".join(summary).strip()
    return (text or None), {k: v for k, v in params.items() if v}


def _is_structured(hint: Any) -> bool:
    """Whether a return annotation produces structured content of object shape."""
    if hint is dict or typing.get_origin(hint) is dict:
        return True
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return not any(issubclass(hint, t) for t in CONTENT_TYPES)
    return typing.is_typeddict(hint) or is_model(hint)


def bytes_block(data: bytes, uri: str) -> dict[str, Any]:
    """Bytes a tool returned, as one content block: an image or audio block when the
    leading bytes say so, otherwise an embedded resource with a base64 blob at ``uri``."""
    mime = sniff_mime(data)
    encoded = base64.b64encode(data).decode("ascii")
    if mime is not None and mime.startswith(("image/", "audio/")):
        return {"type": mime.split("/")[0], "data": encoded, "mimeType": mime}
    return {"type": "resource", "resource": {"uri": uri, "blob": encoded,
                                             "mimeType": mime or "application/octet-stream"}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class ToolBinding:
    """A function bound as a tool: schemas, validator and call path. Thread-safe to call."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        structured_output: bool | None = None,
        context_type: type | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if context_type is None:
            from .context import HandlerContext

            context_type = HandlerContext
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except NameError as exc:
            raise TypeError(f"tool {self.name!r}: cannot resolve type hints: {exc}") from exc
        check_handler(fn, f"tool {self.name!r}")
        doc_text, doc_params = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc_text
        builder = SchemaBuilder()
        properties: dict[str, Any] = {}
        required: list[str] = []
        self.context_param: str | None = None
        self._decoders: list[tuple[str, Decoder]] = []
        self._positional_context = False
        #: Defaults the signature cannot supply itself (those held in a pydantic Field).
        self._defaults: dict[str, Any] = {}
        self._all_arguments = False
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name, Any)
            if input_schema is not None and param.kind is param.VAR_KEYWORD:
                self._all_arguments = True  # a hand-written schema: **kwargs takes them all
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args and **kwargs are not supported")
            if isinstance(hint, type) and issubclass(hint, context_type):
                self.context_param = param.name
                continue
            if input_schema is not None:
                properties[param.name] = {}  # described by the hand-written schema
                continue
            default = param.default
            if is_field_info(default):  # ``x: int = Field(3, ge=0)``, as in pydantic
                hint = typing.Annotated[hint, default]
                default = field_default(default)
            try:
                schema, decoder = builder.build(hint)
            except TypeError as exc:
                raise TypeError(f"tool {self.name!r}, parameter {param.name!r}: {exc}") from None
            schema = dict(schema)
            if param.name in doc_params and "description" not in schema:
                schema["description"] = doc_params[param.name]
            if default is inspect.Parameter.empty:
                required.append(param.name)
            else:
                _set_default(schema, default)
                if default is not param.default:
                    self._defaults[param.name] = default
            properties[param.name] = schema
            if decoder is not None:
                self._decoders.append((param.name, decoder))
        self.input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            self.input_schema["required"] = required
        if builder.defs:
            self.input_schema["$defs"] = builder.defs
        if input_schema is not None:
            if input_schema.get("type") != "object":
                raise TypeError(f"tool {self.name!r}: input_schema must have type 'object'")
            self.input_schema = copy.deepcopy(input_schema)
        # Generated schemas are checked by the compiled fast path: the first call never
        # waits on importing jsonschema (over a second in a Jupyter environment).
        self._validator = SchemaValidator(self.input_schema, generated=input_schema is None)
        self._names = frozenset(properties)
        self._trivial = not properties and input_schema is None
        self._plan_output(hints.get("return", inspect.Parameter.empty), structured_output,
                          SchemaBuilder(mode="serialization"))

    @classmethod
    def from_function(cls, fn: Callable[..., Any], **options: Any) -> ToolBinding:
        return cls(fn, **options)

    def _plan_output(self, hint: Any, structured: bool | None, builder: SchemaBuilder) -> None:
        self.output_schema: dict[str, Any] | None = None
        self._wrap_result = False
        #: ``-> str``: a str result is its own proof of the schema (no validation to run).
        self._str_result = hint is str and structured is not False
        self._structured_allowed = structured is not False
        if hint in (bytes, bytearray, memoryview) and not structured:
            return  # binary content: an image, audio or blob block (see bytes_block)
        if structured is False or hint in (inspect.Parameter.empty, None, _NONE_TYPE):
            if structured:
                raise TypeError(f"tool {self.name!r}: structured output needs a return "
                                f"annotation other than None (got {hint!r})")
            return
        if isinstance(hint, type) and issubclass(hint, (CallToolResult, *CONTENT_TYPES)):
            return
        if structured is None and _is_content_hint(hint):
            return  # content blocks (or lists/unions of them) are content, not data
        if hint is list and structured is None:
            return
        try:
            schema, _ = builder.build(hint)
        except TypeError:
            if structured:
                raise
            return
        if _is_structured(hint):
            self.output_schema = schema
        else:
            self.output_schema = {"type": "object", "properties": {"result": schema},
                                  "required": ["result"]}
            self._wrap_result = True
        if builder.defs:
            self.output_schema = {**self.output_schema, "$defs": builder.defs}
        self._output_validator = SchemaValidator(self.output_schema)

    # -- call time -----------------------------------------------------------------------

    def call(self, arguments: dict[str, Any] | None,
             ctx: HandlerContext | None) -> dict[str, Any]:
        """Validate, decode, call and encode: a wire-shaped CallToolResult. ``ctx`` is the
        request's context (``None``: a call with none, for a tool that takes none)."""
        if arguments is None:
            arguments = {}
        if not self._trivial or arguments:
            errors = self._validator.errors(arguments)
            if errors:
                return self._error(_describe_errors(self.name, errors))
        if self._all_arguments or arguments.keys() <= self._names:
            kwargs = dict(arguments)  # the common case: no argument to leave out
        else:
            kwargs = {k: v for k, v in arguments.items() if k in self._names}
        for key, decoder in self._decoders:
            if key in kwargs:
                try:
                    kwargs[key] = decoder(kwargs[key])
                except (TypeError, ValueError) as exc:
                    return self._error(f"Invalid arguments for tool {self.name!r}: "
                                       f"{key!r}: {exc}")
        for key, value in self._defaults.items():
            kwargs.setdefault(key, value)
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        try:
            value = call_handler(self.fn, kwargs, ctx)
        except RequestTimeoutError as exc:
            # A reverse call (ctx.sample, ...) ran out of time: the tool call itself was not
            # cancelled and must still be answered (before MCPError: it is one).
            return tool_failed(self.name, exc, ctx=ctx)
        except (MCPError, RequestCancelledError):
            raise
        except Exception as exc:  # the tool's failure, mapped and logged in one place
            return tool_failed(self.name, exc, ctx=ctx)
        if isinstance(value, str):  # _encode's first case, without its two calls
            if self.output_schema is None:
                return {"content": [{"type": "text", "text": value}]}
            if self._str_result:
                return {"content": [{"type": "text", "text": value}],
                        "structuredContent": {"result": value}}
        return self.encode(value)

    def _error(self, text: str) -> dict[str, Any]:
        return tool_error(text)

    def encode(self, value: Any) -> dict[str, Any]:
        """Turn a return value into a CallToolResult dict (see the server guide); a value
        that cannot be encoded as JSON is the tool's failure (an ``isError`` result that
        says why), not an internal error of ``tools/call``."""
        try:
            return self._encode(value)
        except (TypeError, ValueError) as exc:
            return tool_failed(self.name, exc, doing="the result cannot be encoded as JSON")

    def _encode(self, value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            if self.output_schema is None:
                return {"content": [_text(value)]}
            if self._str_result:  # wrapped as the official SDK wraps a scalar
                return {"content": [_text(value)], "structuredContent": {"result": value}}
        if isinstance(value, CallToolResult):
            return to_wire(value)  # type: ignore[no-any-return]
        if isinstance(value, CONTENT_TYPES):
            return {"content": [to_wire(value)]}
        if value is None and self.output_schema is None:
            return {"content": []}
        if (isinstance(value, list) and self.output_schema is None
                and any(isinstance(v, CONTENT_TYPES) for v in value)):
            return {"content": [_text(v) if isinstance(v, str) else to_wire(v) for v in value]}
        if isinstance(value, (bytes, bytearray, memoryview)) and self.output_schema is None:
            return {"content": [bytes_block(bytes(value), f"tool://{self.name}/result")]}
        data = to_json_value(value)
        if self.output_schema is None:
            if isinstance(data, dict) and not self._structured_allowed:
                return {"content": [_text(_dumps(data))]}
            if isinstance(data, (dict, list)):
                text = _dumps(data)
                if isinstance(data, dict):
                    return {"content": [_text(text)], "structuredContent": data}
                return {"content": [_text(text)]}
            return {"content": [_text(_dumps(data) if isinstance(data, bool) or data is None
                                      else str(data))]}
        structured = {"result": data} if self._wrap_result else data
        errors = self._output_validator.errors(structured)
        if errors:
            return self._error(f"Error executing tool {self.name}: result does not match its "
                               f"output schema: {errors[0].message}")
        text = data if isinstance(data, str) else _dumps(data)
        return {"content": [_text(text)], "structuredContent": structured}


def _describe_errors(tool: str, errors: list[jsonschema.ValidationError]) -> str:
    parts = []
    for error in sorted(errors, key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path)
        parts.append(f"at {where!r}: {error.message}" if where else error.message)
    return f"Invalid arguments for tool {tool!r}: " + "; ".join(parts)


def _is_content_hint(hint: Any) -> bool:
    """Whether ``hint`` names content blocks: a block type, or a list/union of them at any
    depth (``list[TextContent | ImageContent]``)."""
    if isinstance(hint, type):
        return issubclass(hint, (CallToolResult, *CONTENT_TYPES))
    origin = typing.get_origin(hint)
    if origin in (list, Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not _NONE_TYPE]
        return not args or any(_is_content_hint(a) for a in args)
    return False


# -- calling the user's function (see the module doc) --

#: How often a private loop looks at a cancellation event that cannot call back (a plain
#: ``threading.Event``, such as a task's); the engine's events call back at once.
CANCEL_POLL_INTERVAL = 0.05


def check_handler(fn: Callable[..., Any], what: str) -> None:
    """Refuse at registration what could only fail at every call, with a clear TypeError.

    ``what`` names the handler (``"tool 'search'"``). Generator functions would return a
    generator object, not a result; positional-only parameters cannot be passed by name,
    which is how arguments arrive.
    """
    target = inspect.unwrap(fn)
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise TypeError(f"{what}: {getattr(fn, '__qualname__', fn)!r} is a generator function; "
                        "a handler must return its result (collect the items into a list)")
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    for param in parameters:
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{what}: parameter {param.name!r} is positional-only; arguments "
                            "are passed by name, so remove the '/' from the signature")


def call_handler(fn: Callable[..., Any], kwargs: dict[str, Any],
                 ctx: HandlerContext | None) -> Any:
    """``fn(**kwargs)``; a coroutine it returns is run to completion here (see module doc)."""
    value = fn(**kwargs)
    if isinstance(value, types.CoroutineType):  # inspect.iscoroutine, without the call
        cancelled = getattr(ctx, "cancelled", None)
        return run_coroutine(value, cancelled if isinstance(cancelled, threading.Event)
                             else None)
    return value


def run_coroutine(coro: Coroutine[Any, Any, Any],
                  cancelled: threading.Event | None = None) -> Any:
    """Run ``coro`` in a new event loop on this thread; cancel it when ``cancelled`` is set.

    asyncio is imported here, on the first async handler's first call: importing it costs
    about 50 ms, which every server would otherwise pay at start-up for handlers it may
    never have.
    """
    import asyncio

    loop = asyncio.new_event_loop()
    lock = threading.Lock()
    open_ = [True]
    try:
        task = loop.create_task(coro)

        def cancel_from_any_thread() -> None:
            with lock:  # never after the loop closed: the callback may come much later
                if open_[0]:
                    loop.call_soon_threadsafe(task.cancel)

        if cancelled is not None:
            add_callback = getattr(cancelled, "add_callback", None)
            if callable(add_callback):
                add_callback(cancel_from_any_thread)
            else:
                event = cancelled

                def poll() -> None:
                    if event.is_set():
                        task.cancel()
                    elif not task.done():
                        loop.call_later(CANCEL_POLL_INTERVAL, poll)

                loop.call_soon(poll)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if cancelled is not None and cancelled.is_set():
                raise RequestCancelledError("the request was cancelled") from None
            raise RuntimeError("the coroutine was cancelled") from None
    finally:
        with lock:
            open_[0] = False
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Tasks the handler started and did not await die with its loop, as under asyncio.run."""
    import asyncio

    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

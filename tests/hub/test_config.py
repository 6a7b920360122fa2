"""Reading a host's configuration: JSON with comments (never inside strings), the
``mcpServers`` and ``servers`` shapes, variables, and an entry that can not be used
reported by its name."""

from __future__ import annotations

import json

import pytest

from mcpsync.hub.config import (
    ConfigError,
    ServerEntry,
    entries,
    load_json,
    parse_json,
    read_config,
    strip_comments,
)


def test_comments_go_and_strings_stay() -> None:
    text = """{
      // a line comment
      "servers": { /* a block
         comment */
        "web": {"type": "http", "url": "https://example.com/mcp", // after a value
                "headers": {"X-Note": "/* not a comment */ and // not one either"}},
        "quote": {"command": "echo", "args": ["say \\"hi\\" // still text", "a,]"],},
      },
    }"""
    parsed = parse_json(text)
    web = parsed["servers"]["web"]
    assert web["url"] == "https://example.com/mcp"
    assert web["headers"]["X-Note"] == "/* not a comment */ and // not one either"
    assert parsed["servers"]["quote"]["args"] == ['say "hi" // still text', "a,]"]


def test_plain_json_is_unchanged() -> None:
    original = {"mcpServers": {"a": {"command": "x", "args": ["//", "/*", "*/", ",}"]}}}
    text = json.dumps(original)
    assert strip_comments(text) == text
    assert parse_json(text) == original


def test_an_unclosed_comment_and_bad_json_are_errors_with_a_place() -> None:
    with pytest.raises(ConfigError, match="never closed"):
        parse_json('{"a": 1 /* oops')
    with pytest.raises(ConfigError, match="line 2"):
        parse_json('{\n "a": }')


def test_the_three_shapes(tmp_path) -> None:
    claude = {"mcpServers": {"calc": {"command": "python", "args": ["calc.py"]}}}
    vscode = {"servers": {"calc": {"type": "stdio", "command": "python"}}, "inputs": []}
    bare = {"calc": {"command": "python"}}
    for config in (claude, vscode, bare):
        assert list(read_config(config)) == ["calc"]
    path = tmp_path / "mcp.json"
    path.write_text("// VS Code\n" + json.dumps(vscode))
    assert list(read_config(path)) == ["calc"]
    assert read_config({}) == {}
    with pytest.raises(ConfigError, match="mcpServers"):
        read_config({"something": 1})


def test_stdio_and_http_entries_with_variables() -> None:
    environ = {"TOKEN": "s3cret", "HOME_DIR": "/home/me"}
    found = entries({
        "calc": {"command": "${HOME_DIR}/bin/calc", "args": ["--key", "${TOKEN}", 3],
                 "env": {"KEY": "${env:TOKEN}", "LEVEL": "${LEVEL:-info}", "N": 2},
                 "cwd": "${HOME_DIR}"},
        "web": {"type": "http", "url": "https://${HOST:-example.com}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
        "off": {"command": "x", "disabled": True},
    }, environ)
    assert list(found) == ["calc", "web", "old"]
    calc, web, old = found["calc"], found["web"], found["old"]
    assert isinstance(calc, ServerEntry) and isinstance(web, ServerEntry)
    assert calc.kind == "stdio"
    assert calc.command == ("/home/me/bin/calc", "--key", "s3cret", "3")
    assert calc.env == {"KEY": "s3cret", "LEVEL": "info", "N": "2"}
    assert calc.cwd == "/home/me"
    assert web.kind == "http" and web.url == "https://example.com/mcp"
    assert web.headers == {"Authorization": "Bearer s3cret"}
    assert isinstance(old, ServerEntry) and old.kind == "http"
    assert "s3cret" not in web.describe() and "s3cret" in calc.describe()


def test_an_unset_variable_is_left_as_written_with_a_warning() -> None:
    found = entries({"calc": {"command": "calc", "env": {"KEY": "${MISSING}"}}}, {})
    calc = found["calc"]
    assert isinstance(calc, ServerEntry)
    assert calc.env == {"KEY": "${MISSING}"}
    assert calc.warnings == ("server 'calc': ${MISSING} is not set (left as written)",)


@pytest.mark.parametrize(("raw", "why"), [
    ({"args": ["x"]}, "needs a 'command'"),
    ({"type": "http"}, "'url' must be"),
    ({"url": "ftp://x"}, "'url' must be"),
    ({"type": "websocket", "command": "x"}, "unknown server type"),
    ({"command": "x", "args": "not a list"}, "'args' must be"),
    ({"command": "x", "env": {"A": ["x"]}}, "'env' must be"),
    ({"command": "x", "env": {"KEY": "${input:api-key}"}}, "asks the user in VS Code"),
    ("not an object", "not an object"),
])
def test_an_entry_that_can_not_be_used_is_an_error_naming_it(raw, why) -> None:
    found = entries({"bad": raw, "good": {"command": "x"}}, {})
    assert isinstance(found["good"], ServerEntry)
    error = found["bad"]
    assert isinstance(error, ConfigError) and error.server == "bad"
    assert why in str(error) and str(error).startswith("server 'bad': ")


def test_a_name_that_can_not_be_a_prefix_is_refused() -> None:
    error = entries({"my server": {"command": "x"}}, {})["my server"]
    assert isinstance(error, ConfigError) and "letters, digits" in str(error)


def test_a_file_too_large_or_missing(tmp_path, monkeypatch) -> None:
    import mcpsync.hub.config as config

    with pytest.raises(ConfigError, match="cannot read"):
        load_json(tmp_path / "absent.json")
    big = tmp_path / "big.json"
    big.write_text("{" + " " * 100 + "}")
    monkeypatch.setattr(config, "MAX_CONFIG_BYTES", 50)
    with pytest.raises(ConfigError, match="larger than 50 bytes"):
        load_json(big)

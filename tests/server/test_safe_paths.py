"""A ``files://{+path}`` resource over a directory never reads outside it.

End to end (a real client, a real read function that joins the matched path to its root)
and the :func:`mcpsync.safe_join` helper on its own, symbolic links included.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsync import Client, MCPError, ResourceNotFoundError, Server, UnsafePathError, safe_join


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("SECRET")
    return root


def naive_server(root: Path) -> Server:
    """The handler everyone writes first: ``os.path.join(ROOT, path)``."""
    server = Server("files")

    @server.resource("files://{+path}")
    def read(path: str) -> str:
        with open(os.path.join(root, path)) as f:
            return f.read()

    return server


@pytest.mark.parametrize("protocol_version", ["2025-11-25", "2026-07-28"])
def test_a_naive_join_cannot_be_led_outside_the_root(tree, protocol_version):
    secret = str(tree.parent / "secret.txt")  # an absolute path: /tmp/.../secret.txt
    encoded = secret.replace("/", "%2F")
    with Client.memory(naive_server(tree), protocol_version=protocol_version) as client:
        assert client.read_resource("files://docs/a.txt").contents[0].text == "inside"
        for uri in (f"files://{secret}", f"files://{encoded}", f"files:///{secret}",
                    "files://..%2Fsecret.txt", "files://docs/../../secret.txt"):
            with pytest.raises(MCPError) as caught:
                client.read_resource(uri)
            assert caught.value.code in (-32002, -32602), uri
            assert "SECRET" not in str(caught.value.data)


def test_safe_join_resolves_below_the_root(tree):
    assert safe_join(tree, "docs/a.txt") == (tree / "docs" / "a.txt").resolve()
    assert safe_join(tree, "docs", "new.txt") == (tree / "docs" / "new.txt").resolve()
    assert safe_join(tree, "") == tree.resolve()


@pytest.mark.parametrize("bad", ["/etc/passwd", "//etc", "\\etc", "C:\\x", "c:x", "../x",
                                 "docs/../../x", "a\x00b"])
def test_safe_join_refuses_what_is_not_a_relative_path(tree, bad):
    with pytest.raises(UnsafePathError):
        safe_join(tree, bad)


def test_safe_join_refuses_a_link_that_leads_out(tree):
    (tree / "out").symlink_to(tree.parent)
    (tree / "docs" / "here").symlink_to(tree / "docs" / "a.txt")
    with pytest.raises(UnsafePathError):
        safe_join(tree, "out/secret.txt")
    assert safe_join(tree, "docs/here") == (tree / "docs" / "a.txt").resolve()


def test_safe_join_in_a_read_function_answers_not_found(tree):
    (tree / "out").symlink_to(tree.parent)
    server = Server("files")

    @server.resource("files://{+path}")
    def read(path: str) -> str:
        return safe_join(tree, path).read_text()

    with Client.memory(server, protocol_version="2025-11-25") as client:
        assert client.read_resource("files://docs/a.txt").contents[0].text == "inside"
        with pytest.raises(ResourceNotFoundError) as caught:
            client.read_resource("files://out/secret.txt")
        assert caught.value.data == {"uri": "files://out/secret.txt"}


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(["a", "b", "..", ".", "", "/", "\\", "C:", "x y"]),
                      max_size=6))
def test_safe_join_never_returns_a_path_outside(tmp_path_factory, parts):
    root = tmp_path_factory.getbasetemp() / "hyp-root"
    root.mkdir(exist_ok=True)
    text = "/".join(parts)
    try:
        joined = safe_join(root, text)
    except UnsafePathError:
        return
    real = os.path.realpath(root)
    assert os.path.commonpath([real, joined]) == real

"""RFC 6570 matching (mcpsync.protocol.uritemplate): what a matched value may never be.

The module promises that a template can not be used for path traversal: no matched value is
an absolute path (a leading ``/`` or ``\\``, however spelled or encoded, or a drive letter),
has a ``..`` segment, or holds a NUL, in any kind of expression.
"""

from __future__ import annotations

import ntpath
import posixpath
import urllib.parse

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcpsync.protocol import template_match
from mcpsync.protocol.template_match import MAX_URI_CHARS
from mcpsync.protocol.uritemplate import UriTemplate

TEMPLATES = ["files://{+path}", "files://{path}", "files:///{+path}", "files://root/{+path}",
             "files://{#path}", "files://x{/path}", "files://x{.path}", "files://x{?path}",
             "files://x{?a,path}", "files://x/{a}/{+path}"]

ATTACKS = [
    "files:///etc/passwd", "files://%2Fetc%2Fpasswd", "files:////etc/passwd",
    "files://%2F%2Fetc", "files://\\etc\\passwd", "files://%5Cetc%5Cpasswd",
    "files://%5C%5Cserver%5Cshare", "files://C:/Windows/win.ini", "files://c%3A%5Cboot.ini",
    "files://C:", "files://d:x", "files://a/../../etc", "files://..%2F..%2Fetc",
    "files://%2e%2e/etc", "files://a%00b", "files://a/%2E%2E",
]


def unsafe(value: str) -> bool:
    """An absolute path, a drive, a parent step or a NUL on any platform."""
    norm = value.replace("\\", "/")
    return (posixpath.isabs(norm) or bool(ntpath.splitdrive(value)[0])
            or ".." in norm.split("/") or "\x00" in value)


@pytest.mark.parametrize("uri", ATTACKS)
def test_reserved_expansion_refuses_absolute_paths_and_traversal(uri):
    assert UriTemplate("files://{+path}").match(uri) is None


@pytest.mark.parametrize("uri", [
    "files://x?path=/etc/passwd", "files://x?path=%2Fetc", "files://x?path=..%2Fsecret",
    "files://x?path=C:%5Cx", "files://x?a=1&path=%5C%5Chost"])
def test_query_values_are_held_to_the_same_rule(uri):
    assert UriTemplate("files://x{?a,path}").match(uri) is None


@pytest.mark.parametrize(("template", "uri", "expected"), [
    ("files://{+path}", "files://docs/a/b.txt", {"path": "docs/a/b.txt"}),
    ("files://{+path}", "files://a%20b/c%2Fd", {"path": "a b/c/d"}),
    ("files://{+path}", "files://ab:c", {"path": "ab:c"}),  # not a drive: two letters
    ("files://{path}", "files://report.txt", {"path": "report.txt"}),
    ("files://x{?path}", "files://x?path=a/b", {"path": "a/b"}),
    ("files://{+path}", "files://dir/..file", {"path": "dir/..file"}),
])
def test_ordinary_relative_values_still_match(template, uri, expected):
    assert UriTemplate(template).match(uri) == expected


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TEMPLATES), st.text(max_size=30), st.booleans())
def test_no_matched_value_is_ever_unsafe(template, tail, quote):
    t = UriTemplate(template)
    prefix = template.split("{")[0]
    if quote:
        tail = urllib.parse.quote(tail, safe="")
    uri = prefix + tail
    values = t.match(uri)  # never raises
    if values is not None:
        assert not any(unsafe(v) for v in values.values()), (uri, values)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TEMPLATES), st.text(max_size=10), st.sampled_from(
    ["/", "//", "\\", "\\\\", "C:", "z:\\", "../", "a/../", "\x00", "a\\..\\"]),
    st.text(max_size=10))
def test_expansion_of_an_unsafe_value_never_matches_back(template, head, poison, tail):
    t = UriTemplate(template)
    value = (head + poison + tail) if poison in ("\x00", "a/../", "a\\..\\") else poison + tail
    assert unsafe(value)
    values = {name: value for name in t.variables}
    found = t.match(t.expand(values))
    assert found is None or not any(unsafe(v) for v in found.values())


segment = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                         blacklist_characters="/\\\x00?#[]"),
                  min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@settings(max_examples=300, deadline=None)
@given(st.lists(segment, min_size=1, max_size=4))
def test_safe_relative_paths_round_trip(parts):
    path = "/".join(parts)
    assume(not unsafe(path))
    t = UriTemplate("files://{+path}")
    assert t.match(t.expand({"path": path})) == {"path": path}
    simple = UriTemplate("files://{name}")
    assert simple.match(simple.expand({"name": parts[0]})) == {"name": parts[0]}


# -- matching time: linear in the URI, whatever the template --------------------------


SHAPES = ["x://{a,b,c}", "x://{a}{b}", "x://{name}{.ext}", "x://{+dir}/{+file}",
          "x://{a}{?q}", "x://{+a}{+b}{+c}", "x://{#a,b}", "x://{/a,b}{?q}"]


def test_ambiguous_shapes_are_matched_by_the_linear_matcher():
    for template in SHAPES:
        assert UriTemplate(template)._linear, template
    for template in ["users://{id}/profile", "repo://{owner}/{repo}/{+path}", "files://{+path}",
                     "x://{a}/{b}.json", "x://{+a}"]:
        assert not UriTemplate(template)._linear, template


@pytest.mark.parametrize("template", SHAPES)
def test_a_hostile_uri_is_refused_in_linear_time(template):
    # Each shape let a 2-16 kB URI that fails at its last character cost a backtracking
    # regex seconds to hours of one core, GIL held (x://{a,b,c}: 2 kB took 12 s). A
    # liveness bound, run in a subprocess so the old code could not hang the suite.
    import subprocess
    import sys

    code = ("from mcpsync.protocol.uritemplate import UriTemplate\n"
            f"t = UriTemplate({template!r})\n"
            "for fill in ',', 'a', '.', '/', '&', '?':\n"
            f"    assert t.match('x://' + fill * ({MAX_URI_CHARS} - 7) + '\\n#') is None\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_uri_longer_than_the_bound_matches_no_template():
    template = UriTemplate("files://{+path}")
    assert template.match("files://" + "a" * (MAX_URI_CHARS - 8)) is not None
    assert template.match("files://" + "a" * (MAX_URI_CHARS - 7)) is None


def test_a_trailing_newline_is_not_dropped():
    # The regex ended in "$", which also matches before a final newline: "x://abc\n" was
    # read as x://abc by {+a}, whose values hold no newline.
    assert UriTemplate("x://{+a}").match("x://abc\n") is None
    assert UriTemplate("x://{+a}/{+b}").match("x://a/b\n") is None


_PIECES = st.sampled_from(["{a}", "{+b}", "{#c}", "{.d}", "{/e}", "{?f}", "{&g}", "{h,i}",
                           "{+j,k}", "/", ".", ",", "x", "?", "&", "#"])


def test_a_variable_twice_is_a_template_error():
    with pytest.raises(ValueError, match="twice"):
        UriTemplate("x://{a}/{a}")


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECES, min_size=1, max_size=5),
       uri=st.text(alphabet="/.,x?&#=\n", max_size=14))
def test_the_linear_matcher_gives_the_regexs_answer(pieces, uri):
    try:
        template = UriTemplate("x:" + "".join(pieces))
    except ValueError:
        assume(False)
        return
    atoms = template._atoms
    found = template_match.to_regex(atoms).match("x:" + uri)
    expected = None if found is None else found.groupdict()
    assert template_match.match(atoms, "x:" + uri) == expected

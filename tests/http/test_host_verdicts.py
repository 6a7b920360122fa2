"""HostPolicy remembers its verdicts per Host value: bounded, and never wrong."""

from __future__ import annotations

from mcpsync.http.intake import _MAX_VERDICT_KEY, _MAX_VERDICTS, HostPolicy


def test_verdicts_are_the_same_when_remembered() -> None:
    policy = HostPolicy(["mcp.example.com", "*.internal.example", "api.example:8443"])
    cases = {"mcp.example.com": True, "MCP.example.com:1": True, "a.internal.example": True,
             "api.example:8443": True, "api.example:8444": False, "evil.example": False,
             "127.0.0.1": False}
    for _ in range(3):  # the first pass decides, the next ones remember
        for host, allowed in cases.items():
            assert policy.host_allowed(host) is allowed, host


def test_remembered_verdicts_are_bounded() -> None:
    policy = HostPolicy()
    for i in range(_MAX_VERDICTS * 4):
        assert policy.host_allowed(f"h{i}.example") is False
    long_host = "x" * (_MAX_VERDICT_KEY + 1)
    assert policy.host_allowed(long_host) is False
    assert len(policy._host_verdicts) == _MAX_VERDICTS
    assert long_host not in policy._host_verdicts
    # Past the bound, verdicts are still reached (each time).
    assert policy.host_allowed("localhost:8000") is True
    assert policy.host_allowed("evil.example") is False

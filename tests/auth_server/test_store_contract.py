"""One contract, every store: SQLite (in memory and a file shared by two connections, as
two workers share it) and Redis. The security properties of the server rest on these."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync.auth.issuer import (
    ClientRecord,
    CodeRecord,
    GrantRecord,
    KeyRecord,
    SqlIssuerStore,
    StoreFullError,
    TokenRecord,
)
from mcpsync.auth.issuer.store import IssuerStore

Pair = tuple[IssuerStore, IssuerStore]  # two handles on one store (two workers)


@pytest.fixture(params=["sql-memory", "sql-file", "redis"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    made: list[Any] = []
    if request.param == "sql-memory":
        one = SqlIssuerStore(":memory:", max_clients=3)
        made.append(one)
        yield one, one
    elif request.param == "sql-file":
        path = str(tmp_path / "oauth.db")
        made += [SqlIssuerStore(path, max_clients=3), SqlIssuerStore(path, max_clients=3)]
        yield made[0], made[1]
    else:
        from mcpsync.auth.issuer.redis_store import RedisIssuerStore

        url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
        made += [RedisIssuerStore(url, prefix=prefix, max_clients=3),
                 RedisIssuerStore(url, prefix=prefix, max_clients=3)]
        yield made[0], made[1]
    for store in made:
        store.close()


def code(grant_id: str = "g1", expires_in: float = 60.0) -> CodeRecord:
    return CodeRecord(code_hash="c" * 64, client_id="cl", redirect_uri="https://a/cb",
                      scope="mcp", resource="https://s/mcp", subject="alice",
                      code_challenge="x" * 43, grant_id=grant_id,
                      expires_at=time.time() + expires_in, claims={"name": "Alice"})


def grant(grant_id: str = "g1", subject: str = "alice") -> GrantRecord:
    return GrantRecord(grant_id=grant_id, client_id="cl", subject=subject, scope="mcp",
                       resource="https://s/mcp", created_at=time.time())


def refresh_token(name: str, grant_id: str = "g1") -> TokenRecord:
    return TokenRecord(token_hash=name, kind="refresh", grant_id=grant_id,
                       expires_at=time.time() + 600)


def test_a_code_is_taken_once(stores: Pair) -> None:
    a, b = stores
    a.put_code(code())
    taken, used = b.take_code("c" * 64, time.time())
    assert taken is not None and not used and taken.claims == {"name": "Alice"}
    again, used = a.take_code("c" * 64, time.time())
    assert again is not None and used  # a replay: the caller revokes again.grant_id
    assert a.take_code("d" * 64, time.time()) == (None, False)


def test_a_code_taken_by_racing_workers_goes_to_one(stores: Pair) -> None:
    a, b = stores
    a.put_code(code())
    firsts: list[bool] = []
    lock = threading.Lock()

    def take(store: IssuerStore) -> None:
        _, used = store.take_code("c" * 64, time.time())
        with lock:
            firsts.append(not used)

    threads = [threading.Thread(target=take, args=(s,), name=f"take-{i}")
               for i, s in enumerate([a, b] * 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(firsts) == [False] * 7 + [True]


def test_an_expired_code_is_not_taken(stores: Pair) -> None:
    a, _ = stores
    a.put_code(code(expires_in=5))
    assert a.take_code("c" * 64, time.time() + 10) == (None, False)


def test_rotation_then_reuse_revokes_the_grant(stores: Pair) -> None:
    a, b = stores
    a.put_grant(grant())
    a.put_token(refresh_token("r1"))
    outcome, found = b.rotate_refresh("r1", refresh_token("r2"), time.time())
    assert outcome == "rotated" and found is not None and found.subject == "alice"
    assert a.get_token("r1", time.time()).rotated  # type: ignore[union-attr]
    outcome, found = a.rotate_refresh("r1", refresh_token("r3"), time.time())
    assert outcome == "reused"
    assert a.get_grant("g1").revoked  # type: ignore[union-attr]
    assert a.get_token("r2", time.time()) is None and a.get_token("r3", time.time()) is None
    assert b.rotate_refresh("r2", refresh_token("r4"), time.time()) == ("unknown", None)
    assert a.grants_of("alice") == []


def test_revoking_a_grant_ends_its_tokens_only(stores: Pair) -> None:
    a, b = stores
    a.put_grant(grant("g1"))
    a.put_grant(grant("g2"))
    a.put_token(refresh_token("r1", "g1"))
    a.put_token(TokenRecord("at1", "access", "g1", time.time() + 60))
    a.put_token(refresh_token("r2", "g2"))
    assert [g.grant_id for g in b.grants_of("alice")] == ["g1", "g2"]
    b.revoke_grant("g1")
    assert a.get_token("r1", time.time()) is None and a.get_token("at1", time.time()) is None
    assert a.get_token("r2", time.time()) is not None
    assert [g.grant_id for g in a.grants_of("alice")] == ["g2"]
    assert a.grants_of("bob") == []


def test_dynamic_clients_are_bounded_registered_ones_are_not(stores: Pair) -> None:
    a, b = stores
    for i in range(3):
        a.put_client(ClientRecord(f"d{i}", {"client_name": f"d{i}"}, "dynamic"))
    with pytest.raises(StoreFullError):
        b.put_client(ClientRecord("d3", {}, "dynamic"))
    b.put_client(ClientRecord("d0", {"client_name": "again"}, "dynamic"))  # a replace
    b.put_client(ClientRecord("site", {}, "registered"))
    assert a.get_client("d0", time.time()).metadata == {"client_name": "again"}  # type: ignore[union-attr]
    assert a.get_client("site", time.time()) is not None


def test_a_cached_document_expires(stores: Pair) -> None:
    a, b = stores
    now = time.time()
    a.put_client(ClientRecord("https://c/doc.json", {}, "metadata-document",
                              created_at=now, expires_at=now + 30))
    assert b.get_client("https://c/doc.json", now) is not None
    assert b.get_client("https://c/doc.json", now + 31) is None


def test_keys_newest_first_and_bounded(stores: Pair) -> None:
    a, b = stores
    for i in range(4):
        a.add_key(KeyRecord(f"k{i}", f"pem{i}", 1000.0 + i), keep=3)
    assert [k.kid for k in b.signing_keys()] == ["k3", "k2", "k1"]


def test_purge_keeps_what_is_live(stores: Pair) -> None:
    a, _ = stores
    a.put_grant(grant())
    a.put_token(refresh_token("live"))
    a.purge(time.time())
    assert a.get_token("live", time.time()) is not None
    assert a.get_grant("g1") is not None


def test_purge_drops_revoked_and_spent_grants(stores: Pair) -> None:
    a, b = stores
    old = time.time() - 2 * 24 * 3600
    a.put_grant(GrantRecord("spent", "cl", "alice", "mcp", "https://s/mcp", old))
    a.put_grant(GrantRecord("young", "cl", "alice", "mcp", "https://s/mcp", time.time()))
    a.put_grant(grant("gone"))
    a.revoke_grant("gone")
    b.purge(time.time())
    if isinstance(a, SqlIssuerStore) or type(a).__name__ == "DjangoIssuerStore":
        assert a.get_grant("spent") is None and a.get_grant("gone") is None
    # Redis keeps the records until they expire (90 days after the last use); either way a
    # revoked grant is listed nowhere and a live one stays.
    listed = [g.grant_id for g in a.grants_of("alice")]
    assert "gone" not in listed and "young" in listed

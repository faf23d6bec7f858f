"""The edges' own rules, each at the lowest level that proves it (issue 39): the ranges
of values from outside, records that would not read back, the token file, who the front
door lets in, and the log throttle."""

import logging

import pytest

from ctxkeep.daemon.store.errors import Undecodable
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.transports.http.bounds import Throttle, connection_cap
from ctxkeep.daemon.transports.http.guard import Guard, host_name
from ctxkeep.protocol.http_token import exposed, read_or_make
from ctxkeep.protocol.limits import NumCtx, Options, OutOfRange, checked
from ctxkeep.protocol.tools import FunctionCall, ToolCall


def test_values_from_outside_are_checked_strictly_against_their_ranges():
    assert checked(4096, NumCtx, "num_ctx") == 4096
    for bad, says in (("4096", "got `str`"), (2**63, "<= 16777216"), (-1, ">= 256"), (True, "got `bool`")):
        with pytest.raises(OutOfRange, match=f"num_ctx: Expected .*{says}"):
            checked(bad, NumCtx, "num_ctx")
    assert checked({"temperature": 0.5, "stop": ["\n"]}, Options, "options") == {"temperature": 0.5, "stop": ["\n"]}
    with pytest.raises(OutOfRange):
        checked({f"k{i}": 1 for i in range(65)}, Options, "options")


def test_the_store_refuses_what_would_not_read_back_and_writes_nothing(tmp_path):
    store = Store.open(tmp_path / "store")
    session = store.sessions.create(name="s", model="m", system="", options={}, num_ctx=2048)
    poisoned = NewMessage(role="assistant", content="", tool_calls=[
        ToolCall(function=FunctionCall(name="lookup", arguments=[1, 2]))])  # type: ignore[arg-type]
    with pytest.raises(Undecodable, match="would not read back"):
        store.history.append(session.id, [NewMessage(role="user", content="hi"), poisoned])
    assert store.history.page(session.id, 0, 10)[0] == []  # the whole append was refused
    with pytest.raises(Undecodable):
        store.sessions.create(name="t", model="m", system="", options={}, num_ctx=2**63)
    assert [s.name for s in store.sessions.all()] == ["s"]


def test_a_token_file_others_could_read_is_replaced(tmp_path):
    path = tmp_path / "config" / "http-token"
    path.parent.mkdir()
    path.write_text("everyone-can-read-this\n")
    path.chmod(0o644)
    assert exposed(path)
    token = read_or_make(path)
    assert token != "everyone-can-read-this" and not exposed(path)
    assert path.stat().st_mode & 0o777 == 0o600 and read_or_make(path) == token


def test_the_guard_lets_in_this_machines_names_and_allowed_origins_only():
    guard = Guard("127.0.0.1", ["https://chat.example", "http://192.168.1.5:*"])
    assert [host_name(h) for h in ("localhost:11435", "[::1]:80", "::1", "evil.example")] == \
        ["localhost", "::1", "::1", "evil.example"]
    for host in ("localhost:11435", "127.0.0.1:1", "[::1]:11435", "app.localhost", "",
                  "host.docker.internal:11435", "printer.local", "192.168.1.5", "0.0.0.0:1"):
        assert guard.host_allowed(host), host  # as Ollama's allowedHost
    for host in ("evil.example:11435", "8.8.8.8", "127.0.0.1.evil.example", "local.evil.example"):
        assert not guard.host_allowed(host), host
    assert not Guard("0.0.0.0", []).on_loopback and Guard("0.0.0.0", []).host_allowed("example.org")
    for origin in ("http://localhost:3000", "https://127.0.0.1", "app://obsidian.md", "https://chat.example",
                   "http://192.168.1.5:8080", "vscode-webview://abc", "http://[::1]:8080", "https://[::1]"):
        assert guard.origin_allowed(origin), origin
    for origin in ("http://evil.example", "https://chat.example.evil.example", "http://localhost.evil.example",
                   "null", "http://192.168.1.6:8080", "http://:8080", "http://1:8080"):
        assert not guard.origin_allowed(origin), origin


def test_the_connection_cap_leaves_descriptors_for_the_rest():
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert connection_cap(10) == min(10, soft - 256)
    assert connection_cap(10**6) == soft - 256


def test_request_errors_are_logged_once_a_source_an_interval():
    throttle = Throttle(interval=60)

    def record(source: str) -> logging.LogRecord:
        return logging.LogRecord("x", logging.ERROR, __file__, 1, "Error handling request from %s", (source,), None)
    assert throttle.filter(record("1.2.3.4"))
    assert not any(throttle.filter(record("1.2.3.4")) for _ in range(100))
    assert throttle.filter(record("5.6.7.8"))


def test_at_the_shared_subscription_limit_the_largest_holder_gives_way():
    from ctxkeep.daemon.transports.zmq.subscriptions import SubscriptionLedger
    ledger = SubscriptionLedger(max_total=10, max_per_client=6)
    for i in range(6):
        ledger.add("hog", b"h%d" % i)
    for i in range(4):
        ledger.add("other", b"o%d" % i)
    assert ledger.refusal("new", b"") == "a subscription past the limit of 10 at once (max_subscriptions)"
    assert ledger.hog("new") == "hog"  # 6 held against the newcomer's 1
    assert ledger.hog("hog") is None  # the largest never evicts another for itself
    assert ledger.hog("other") == "hog"
    ledger.client_left("hog")
    assert ledger.hog("new") == "other"
    assert SubscriptionLedger(10, 6).hog("new") is None  # below the limit: nobody is closed


def test_a_long_text_is_counted_in_slices_with_the_same_features():
    import random

    from ctxkeep.daemon import tokens
    pieces = ["hello", "wörld", "42", "a\nb", "x.y", "  ", "日本", "supercalifragilistic" * 5]
    for seed in range(3):
        rng = random.Random(seed)
        text = " ".join(rng.choice(pieces) for _ in range(60_000))
        assert len(text) > 3 * tokens.SLICE
        assert tokens.text_features(text) == tokens._features(text)
    unbroken = "a" * (3 * tokens.SLICE)  # no space to cut at: cut anyway, the letters all counted
    assert tokens.text_features(unbroken)[0] == len(unbroken)


def test_ascii_text_is_counted_as_the_regular_expressions_count_it():
    """The byte-translation path for ASCII text: every feature the same as the regular
    expressions give, over random texts of all 128 ASCII characters (controls included)."""
    import random

    from ctxkeep.daemon import tokens
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(128)]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert tokens.text_features(text) == tokens.by_expressions(text), repr(text)


def test_text_beyond_ascii_is_counted_as_the_regular_expressions_count_it():
    """Text with a dash, an accent or another script (most of what a model writes into a
    checkpoint, and every non-English chat): each character beyond ASCII moved to where the
    expressions count it. Random texts of ASCII and of characters of every kind beyond it:
    letters of other scripts, their digits, numerals that are not digits, spaces that are not
    ASCII's, line separators, marks, symbols, a lone surrogate."""
    import random

    from ctxkeep.daemon import tokens
    beyond = ("é ß Ω ж 日 本 ا ٣ ७ ² ½ Ⅻ \u00a0 \u2003 \u3000 \u2028 \u0301 — “ ” € ✓ 🙂 \ud800 Ａ ０ ｡").split(" ")
    alphabet = [chr(c) for c in range(128)] + beyond * 4
    rng = random.Random(11)
    for _ in range(5000):  # short ones (character by character) and long ones (by the table)
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([rng.randint(1, 80), rng.randint(500, 1500)])))
        assert tokens.text_features(text) == tokens.by_expressions(text), repr(text)
        assert tokens._mixed_features(text) == tokens._wide_features(text), repr(text)  # both ways, any length
    for text in ("Größe 42", "word — " * 700, "我们今天去公园散步，天气很好。" * 50, "Привет, как дела? 123 " * 40):
        assert tokens.text_features(text) == tokens.by_expressions(text)

"""`pma-mcp ui` over real HTTP: its security checks, escaping, and each view's content.

One real server process per module (tests/ui_server.py), spoken to with http.client so every
header (Host, Cookie, Origin) is exactly what the test says.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.ui_server import PROJECT, XSS, Running, ids, server, store

__all__ = ["ids", "server", "store"]  # fixtures from tests/ui_server.py


class Reply:
    def __init__(self, resp: http.client.HTTPResponse) -> None:
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        self.body = resp.read().decode("utf-8")


def request(server: Running, method: str, path: str, *, host: str | None = None,
            cookie: bool = True, form: dict[str, str] | None = None,
            headers: dict[str, str] | None = None) -> Reply:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    sent = {"Host": host or f"127.0.0.1:{server.port}", **(headers or {})}
    if cookie:
        sent["Cookie"] = f"pma_ui_{server.port}={server.token}"
    body = None
    if form is not None:
        body = urlencode(form)
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=sent)
        return Reply(conn.getresponse())
    finally:
        conn.close()


def csrf_of(page: str) -> str:
    found = re.search(r'name=csrf value="([^"]+)"', page)
    assert found, "no CSRF field on the page"
    return found[1]


def memory_path(memory_id: str) -> str:
    return f"/memory/{memory_id}?{urlencode({'ns': PROJECT})}"


# -------------------------------------------------------------------- security


def test_printed_url_is_loopback_with_a_long_token(server: Running) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert len(server.token) >= 40


def test_request_without_token_is_refused_and_shows_nothing(
    server: Running, ids: dict[str, str]
) -> None:
    for path in ("/", "/memories", memory_path(ids["decision"]), "/export"):
        reply = request(server, "GET", path, cookie=False)
        assert reply.status == 403, path
        assert "SQLite" not in reply.body and "token" in reply.body
    wrong = request(server, "GET", "/?token=not-the-token", cookie=False)
    assert wrong.status == 403
    forged = request(server, "GET", "/", cookie=False,
                     headers={"Cookie": f"pma_ui_{server.port}=not-the-token"})
    assert forged.status == 403


def test_token_in_url_becomes_a_strict_http_only_cookie(server: Running) -> None:
    reply = request(server, "GET", f"/memories?tier=semantic&token={server.token}",
                    cookie=False)
    assert reply.status == 303
    assert reply.headers["location"] == "/memories?tier=semantic"  # token out of the URL
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"pma_ui_{server.port}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_foreign_host_is_refused_even_with_the_token(server: Running) -> None:
    """DNS rebinding: evil.example resolving to 127.0.0.1 still sends its own name."""
    for host in (f"evil.example:{server.port}", "127.0.0.1", f"127.0.0.1:{server.port + 1}",
                 f"localhost.evil.example:{server.port}"):
        reply = request(server, "GET", "/", host=host)
        assert reply.status == 421, host
        assert "SQLite" not in reply.body
    assert request(server, "GET", "/", host=f"localhost:{server.port}").status == 200


def test_listens_on_loopback_only(server: Running) -> None:
    """The kernel's socket table: our listening port is bound to 127.0.0.1, nothing else."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        pytest.skip("no /proc/net/tcp on this system")
    listening = []
    for line in table.read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, port = local.split(":")
        if state == "0A" and int(port, 16) == server.port:  # 0A: LISTEN
            listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, little-endian hex
    if Path("/proc/net/tcp6").exists():
        assert f":{server.port:04X} " not in Path("/proc/net/tcp6").read_text()


def test_no_cors_and_a_script_free_policy(server: Running) -> None:
    reply = request(server, "GET", "/", headers={"Origin": "https://evil.example"})
    assert reply.status == 200
    assert not any(k.startswith("access-control-") for k in reply.headers)
    csp = reply.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert reply.headers["x-frame-options"] == "DENY"
    assert "<script" not in reply.body
    preflight = request(server, "OPTIONS", "/", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status == 405
    assert not any(k.startswith("access-control-") for k in preflight.headers)


def test_state_changes_need_post_with_the_csrf_token(
    server: Running, ids: dict[str, str]
) -> None:
    target = ids["bug"]
    page = request(server, "GET", memory_path(target)).body
    token = csrf_of(page)
    assert request(server, "GET", f"/memory/{target}/pin?ns={PROJECT}").status == 405
    no_csrf = request(server, "POST", f"/memory/{target}/pin", form={"ns": PROJECT})
    assert no_csrf.status == 403
    stale = request(server, "POST", f"/memory/{target}/pin",
                    form={"ns": PROJECT, "csrf": "x" * len(token)})
    assert stale.status == 403
    foreign = request(server, "POST", f"/memory/{target}/pin",
                      form={"ns": PROJECT, "csrf": token},
                      headers={"Origin": "https://evil.example"})
    assert foreign.status == 403
    assert "importance</th><td>0.60" in request(server, "GET", memory_path(target)).body
    done = request(server, "POST", f"/memory/{target}/pin", form={"ns": PROJECT, "csrf": token},
                   headers={"Origin": f"http://127.0.0.1:{server.port}"})
    assert done.status == 303
    after = request(server, "GET", done.headers["location"]).body
    assert "importance</th><td>1.00" in after and "Pinned" in after


def test_memory_text_is_escaped_everywhere(server: Running, ids: dict[str, str]) -> None:
    pages = [request(server, "GET", memory_path(ids["xss"])).body,
             request(server, "GET", "/memories").body,
             request(server, "GET", "/memories?" + urlencode({"q": "pasted chat click"})).body]
    for body in pages:
        assert "<script>document.title" not in body
        assert 'href="javascript:' not in body and "<img src=x" not in body
        assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in body
    assert XSS.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;") in pages[0]


# ---------------------------------------------------------------------- views


def test_overview_shows_tiers_sources_and_a_chart(server: Running) -> None:
    body = request(server, "GET", "/").body
    assert "Overview of /home/dev/acme-api" in body
    assert "<b>17</b>memories" in body and "<b>12</b>auto-saved" in body
    assert "<b>5</b>remembered explicitly" in body
    assert "<svg" in body and "memories created per day" in body
    assert re.search(r"<td class=tier>semantic</td><td>2</td>", body)


def test_list_filters_and_pages(server: Running, ids: dict[str, str]) -> None:
    first = request(server, "GET", "/memories?" + urlencode({"tag": "auto-saved"})).body
    assert first.count("<tr><td><a href=") == 12
    semantic = request(server, "GET", "/memories?" + urlencode({"tier": "semantic"})).body
    assert ids["decision"][:10] in semantic and ids["bug"][:10] not in semantic
    entity = request(server, "GET", "/memories?" + urlencode(
        {"entity": "pma_mcp/hooks.py"})).body
    assert entity.count("<tr><td><a href=") == 1 and ids["bug"][:10] in entity
    source = request(server, "GET", "/memories?" + urlencode({"source": "hook:stop"})).body
    assert source.count("<tr><td><a href=") == 12
    bad = request(server, "GET", "/memories?" + urlencode({"since": "yesterday"}))
    assert bad.status == 400 and "YYYY-MM-DD" in bad.body


def test_keyset_pages_cover_everything_once(server: Running) -> None:
    seen: list[str] = []
    path = "/memories?" + urlencode({"ns": PROJECT})
    while True:
        body = request(server, "GET", path.replace("&amp;", "&")).body
        seen.extend(re.findall(r"<code>([0-9a-f]{10})</code>", body))
        older = re.search(r'<a rel=next href="([^"]+)"', body)
        if older is None:
            break
        path = older[1]
    assert len(seen) == len(set(seen)) == 17


def test_search_shows_the_four_weighted_parts(server: Running, ids: dict[str, str]) -> None:
    body = request(server, "GET", "/memories?" + urlencode({"q": "SQLite WAL store"})).body
    assert ids["decision"][:10] in body
    found = re.search(r"<b>([0-9.]+)</b> = <span class=\"muted parts\">([^<]+)</span>", body)
    assert found is not None
    composite, parts = found.groups()
    numbers = [float(p) for p in parts.split(" + ")]
    assert len(numbers) == 4 and numbers[0] > 0
    assert abs(sum(numbers) - float(composite)) < 0.003


def test_memory_page_has_lineage_gc_and_actions(server: Running, ids: dict[str, str]) -> None:
    body = request(server, "GET", memory_path(ids["old_note"])).body
    assert "Scratch: try the payments sandbox" in body
    assert "<b>created</b>" in body and "What GC would do" in body and "Next GC: <b>" in body
    assert "<tr><th>author</th><td>unknown</td></tr>" in body  # stored with no author set
    for action in ("/edit", "/pin", "/supersede", "/forget"):
        assert f"/memory/{ids['old_note']}{action}" in body


def test_edit_supersede_and_forget_through_forms(server: Running, ids: dict[str, str]) -> None:
    token = csrf_of(request(server, "GET", memory_path(ids["auto0"])).body)
    edited = request(server, "POST", f"/memory/{ids['auto0']}/edit", form={
        "ns": PROJECT, "csrf": token, "content": "Keyset pagination by seq, never OFFSET.",
        "importance": "0.7", "memory_type": "semantic", "tags": "paging, decision",
        "linked_entities": ""})
    assert edited.status == 303
    page = request(server, "GET", edited.headers["location"]).body
    assert "never OFFSET" in page and "<b>edited</b>" in page and "Saved." in page
    bad = request(server, "POST", f"/memory/{ids['auto0']}/edit",
                  form={"ns": PROJECT, "csrf": token, "importance": "9"})
    assert bad.status == 400 and "importance" in bad.body
    new = request(server, "POST", f"/memory/{ids['auto1']}/supersede", form={
        "ns": PROJECT, "csrf": token, "content": "Corrected: step one uses the cursor."})
    assert new.status == 303
    old = request(server, "GET", memory_path(ids["auto1"])).body
    assert "superseded by" in old and "archived" in old
    gone = request(server, "POST", f"/memory/{ids['auto2']}/forget",
                   form={"ns": PROJECT, "csrf": token})
    assert gone.status == 303
    after = request(server, "GET", gone.headers["location"]).body
    assert "(deleted)" in after and "<b>deleted</b>" in after and "Forgotten" in after


def test_gc_page_previews_and_applies(server: Running, ids: dict[str, str]) -> None:
    body = request(server, "GET", "/gc").body
    assert "Plan over all" in body and "<h2>demote" in body
    assert ids["old_note"][:10] in body  # a working note idle for two weeks
    reply = request(server, "POST", "/gc/apply", form={"ns": PROJECT, "csrf": csrf_of(body)})
    assert reply.status == 200 and "Applied:" in reply.body
    note = request(server, "GET", memory_path(ids["old_note"])).body
    assert "<b>demote</b> working → episodic" in note


def test_export_is_a_download_of_the_namespace(server: Running) -> None:
    reply = request(server, "GET", "/export")
    assert reply.status == 200
    assert reply.headers["content-disposition"].startswith("attachment;")
    doc = json.loads(reply.body)
    assert doc["memories"] and {m["namespace"] for m in doc["memories"]} == {PROJECT}


def test_busy_port_is_one_clear_line(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "pma_mcp", "ui", "--port", str(port)],
            env={"PMA_DB_PATH": str(tmp_path / "s.db"), "PMA_NAMESPACE": PROJECT,
                 "PATH": "/usr/bin:/bin"},
            capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in proc.stderr
    assert proc.stdout == ""


def test_token_redirect_stays_on_this_site(server: Running) -> None:
    reply = request(server, "GET", f"//evil.example/x?token={server.token}", cookie=False)
    assert reply.status == 303 and reply.headers["location"] == "/evil.example/x"


@pytest.mark.parametrize("spelling", ["/%5Cevil.example/x", "/%5C%5Cevil.example",
                                      "/%09/evil.example", "/%2F%2Fevil.example",
                                      "/%0A/evil.example", "/%5C/evil.example",
                                      "/%2F%5Cevil.example", "/%0D%0A//evil.example"])
def test_token_redirect_never_resolves_off_site(server: Running, spelling: str) -> None:
    """Browsers drop tabs and newlines from a Location and read a backslash as a slash: the
    redirect is a same-origin path however the request's path was encoded."""
    from urllib.parse import urljoin, urlsplit

    reply = request(server, "GET", f"{spelling}?token={server.token}&ns=x", cookie=False)
    assert reply.status == 303
    location = reply.headers["location"]
    as_browser = re.sub(r"[\t\n\r]", "", location).replace("\\", "/")
    assert as_browser.startswith("/") and not as_browser.startswith("//"), location
    assert urlsplit(urljoin(server.base + "/", as_browser)).netloc == f"127.0.0.1:{server.port}"
    assert location.endswith("?ns=x") and server.token not in location


@pytest.mark.parametrize("before", ["9" * 400, "9223372036854775808", "²", "-1", "1e5",
                                    "0x10", " 7"])
def test_an_ill_formed_page_key_is_a_400_with_one_line(server: Running, before: str) -> None:
    from urllib.parse import quote

    reply = request(server, "GET", f"/memories?ns={quote(PROJECT)}&before={quote(before)}")
    assert reply.status == 400, reply.body[:300]
    assert "before: must be a whole number from 0 to 9223372036854775807" in reply.body
    assert "Traceback" not in reply.body and "9" * 60 not in reply.body


@pytest.mark.parametrize("importance", ["nan", "1e999", "-inf", "x" * 500, "2"])
def test_an_ill_formed_importance_is_a_400(server: Running, ids: dict[str, str],
                                           importance: str) -> None:
    page = request(server, "GET", memory_path(ids["rule"]))
    reply = request(server, "POST", f"/memory/{ids['rule']}/edit", form={
        "csrf": csrf_of(page.body), "ns": PROJECT, "importance": importance})
    assert reply.status == 400, reply.body[:300]
    assert "importance: must be a number" in reply.body and "x" * 60 not in reply.body
    assert request(server, "GET", memory_path(ids["rule"])).status == 200


@pytest.mark.parametrize("kind", ["not a database", "a directory", "port out of range"])
def test_an_unusable_store_or_port_is_one_line_and_exit_1(tmp_path: Path, kind: str) -> None:
    import subprocess
    import sys

    db = tmp_path / "s.db"
    port = "0"
    if kind == "not a database":
        db.write_bytes(b"this is not a SQLite file at all, only text\n" * 100)
    elif kind == "a directory":
        db.mkdir()
    else:
        port = "99999"
    proc = subprocess.run(
        [sys.executable, "-m", "pma_mcp", "ui", "--port", port],
        env={"PMA_DB_PATH": str(db), "PMA_NAMESPACE": PROJECT, "PATH": "/usr/bin:/bin",
             "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("pma-mcp ui: "), proc.stderr
    assert "Traceback" not in proc.stderr

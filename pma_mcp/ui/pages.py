"""HTML of the local browser's views: pure functions of service results.

Every value that comes from the store goes through `e()` (html.escape, quotes included), and
no memory text ever becomes a URL: a memory holding `<script>` or a `javascript:` link shows
as text. Links carry only ids, tiers and the caller's own filter values, URL-encoded. No
scripts and no external assets: the page works offline and under a script-free CSP.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from urllib.parse import urlencode

from pma_mcp.core.models import (
    GCDecision,
    GCPreview,
    GCResult,
    InspectResult,
    LineageEvent,
    Memory,
    MemoryKind,
    MemoryType,
    Overview,
    Page,
    ScoredMemory,
)
from pma_mcp.core.scoring import Weights
from pma_mcp.core.text.lexicon import preview

PREVIEW_CHARS = 160
PARTS = ("semantic", "importance", "recency", "access")
COLOURS = {"semantic": "#3b6fb6", "importance": "#d08a1f", "recency": "#3f9b5a",
           "access": "#8a5bb5"}
NOTES = {
    "edited": "Saved.", "unchanged": "Nothing to change: the memory already has those values.",
    "pinned": "Pinned: importance is 1.0.", "superseded": "Stored the correction; this one is "
    "archived and points at it.", "forgotten": "Forgotten. Its lineage is kept.",
}
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d2b3a;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;
align-items:center;flex-wrap:wrap}
header a{color:#cfe0f5;text-decoration:none}header b{margin-right:1em}
main{padding:1em 1.4em;max-width:1150px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e2e5ea;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}
pre.content{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #dde;
padding:.8em;font:13px/1.5 ui-monospace,monospace}
.muted{color:#66707c}.tier{font-variant:small-caps}.note{background:#e7f5e9;padding:.5em .8em}
.error{background:#fbe9e9;padding:.5em .8em}
form.inline{display:inline}fieldset{border:1px solid #dde;background:#fff;margin:.6em 0}
label{display:inline-block;margin:.2em .8em .2em 0}textarea{width:100%;min-height:6em}
.bar{display:inline-block;height:.8em;background:#3b6fb6}.over{background:#c23b3b}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{background:#fff;border:1px solid #dde;
padding:.6em 1em;min-width:10em}.card b{font-size:1.4em;display:block}
button{cursor:pointer}.danger{background:#c23b3b;color:#fff;border:0;padding:.35em .8em}
ol.timeline{list-style:none;padding-left:0;border-left:3px solid #c9d3df}
ol.timeline li{margin:0 0 .6em .8em}
"""


def e(value: object) -> str:
    """Escaped text for element content and quoted attribute values."""
    return html.escape(str(value), quote=True)


def when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def url(path: str, **params: object) -> str:
    """`path` with the non-empty params, URL-encoded (then escaped by the caller's `e`)."""
    kept = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return path + (f"?{urlencode(kept)}" if kept else "")


def layout(title: str, body: str, namespace: str, namespaces: Sequence[str],
           note: str | None = None) -> str:
    options = "".join(
        f'<option value="{e(n)}"{" selected" if n == namespace else ""}>{e(n)}</option>'
        for n in dict.fromkeys([namespace, *namespaces]))
    links = " ".join(
        f'<a href="{e(url(path, ns=namespace))}">{label}</a>'
        for path, label in (("/", "Overview"), ("/memories", "Memories"), ("/gc", "GC"),
                            ("/export", "Export")))
    flash = f'<p class="note" role="status">{e(NOTES[note])}</p>' if note in NOTES else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{e(title)} · pma</title><style>{STYLE}</style></head><body>"
        f"<header><b>pma memory</b>{links}"
        '<form method=get action="/" class=inline><label>namespace '
        f'<select name=ns>{options}</select></label><button>show</button></form></header>'
        f"<main><h1>{e(title)}</h1>{flash}{body}</main></body></html>"
    )


def error_page(message: str, namespace: str, namespaces: Sequence[str]) -> str:
    return layout("Cannot do that", f'<p class="error" role="alert">{e(message)}</p>',
                  namespace, namespaces)


# --------------------------------------------------------------------- overview


def overview(ov: Overview, namespaces: Sequence[str]) -> str:
    explicit = ov.total - ov.auto_saved
    cards = "".join(f'<div class=card><b>{value:,}</b>{e(label)}</div>' for value, label in (
        (ov.total, "memories"), (ov.auto_saved, "auto-saved by hooks"),
        (explicit, "remembered explicitly"), (ov.gc_changes, "GC changes pending")))
    rows = []
    for t in ov.tiers:
        if t.capacity:
            share = t.tokens / t.capacity
            bar = (f'<span class="bar{" over" if share > 1 else ""}" '
                   f'style="width:{min(share, 1) * 160:.0f}px"></span> {share:.0%}')
            cap = f"{t.capacity:,}"
        else:
            bar, cap = '<span class=muted>no limit</span>', "–"
        rows.append(f"<tr><td class=tier>{e(t.tier.value)}</td><td>{t.count:,}</td>"
                    f"<td>{t.tokens:,}</td><td>{cap}</td><td>{bar}</td></tr>")
    gc = (f"<p>The next GC pass over {ov.gc_window:,} memories would change "
          f"<b>{ov.gc_changes:,}</b>. <a href=\"{e(url('/gc', ns=ov.namespace))}\">"
          "Preview it</a>.</p>")
    body = (
        f"<div class=cards>{cards}</div>"
        "<h2>Tiers</h2><table><tr><th>tier</th><th>memories</th><th>tokens</th>"
        f"<th>capacity</th><th>use</th></tr>{''.join(rows)}</table>"
        f"<h2>GC pressure</h2>{gc}<h2>Memories over time</h2>{chart(ov.created, ov.period_days)}"
    )
    return layout(f"Overview of {ov.namespace}", body, ov.namespace, namespaces)


def chart(created: Sequence[tuple[float, int]], period_days: int, width: int = 720,
          height: int = 160) -> str:
    """An inline SVG bar chart of memories created per period."""
    if not created:
        return "<p class=muted>No memories yet.</p>"
    top = max(n for _, n in created)
    step = width / len(created)
    bars = []
    for i, (start, n) in enumerate(created):
        h = 0 if top == 0 else (height - 20) * n / top
        bars.append(f'<rect x="{i * step:.1f}" y="{height - 20 - h:.1f}" '
                    f'width="{max(step - 1, 1):.1f}" height="{h:.1f}" fill="#3b6fb6">'
                    f"<title>{e(when_day(start))}: {n:,}</title></rect>")
    last = created[-1][0] + (period_days - 1) * 86_400
    label = (f'<text x="0" y="{height - 4}" font-size="11">{e(when_day(created[0][0]))}</text>'
             f'<text x="{width}" y="{height - 4}" font-size="11" text-anchor="end">'
             f"{e(when_day(last))}</text>")
    unit = "day" if period_days == 1 else f"{period_days} days"
    return (f'<svg role="img" aria-label="memories created per {unit}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">{"".join(bars)}{label}</svg>'
            f"<p class=muted>Memories created per {unit}; the tallest bar is {top:,}.</p>")


def when_day(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d")


# --------------------------------------------------------------------- memories


def _options(chosen: str | None, values: Iterable[str]) -> str:
    return "".join(f'<option{" selected" if chosen == v else ""}>{e(v)}</option>'
                   for v in values)


def filter_form(namespace: str, values: Mapping[str, str]) -> str:
    tiers = _options(values.get("tier"), (t.value for t in MemoryType))
    kinds = _options(values.get("kind"), (k.value for k in MemoryKind))
    fields = "".join(
        f'<label>{label} <input name={name} type={kind} value="{e(values.get(name, ""))}">'
        "</label>"
        for name, label, kind in (("tag", "tag", "text"), ("entity", "entity", "text"),
                                  ("source", "source", "text"), ("since", "from", "date"),
                                  ("until", "to", "date")))
    return (
        '<form method=get action="/memories"><fieldset>'
        f'<input type=hidden name=ns value="{e(namespace)}">'
        f'<label>search <input name=q type=search size=40 value="{e(values.get("q", ""))}">'
        f'</label><label title="what a memory is">kind <select name=kind>'
        f'<option value="">any</option>{kinds}</select></label>'
        f'<label title="where the collector keeps it now">tier <select name=tier>'
        f'<option value="">any</option>{tiers}'
        f"</select></label>{fields}<button>apply</button></fieldset></form>"
    )


def memory_list(namespace: str, namespaces: Sequence[str], page: Page,
                values: Mapping[str, str]) -> str:
    rows = "".join(_row(m) for m in page.memories)
    more = ""
    if page.next_before is not None:
        older = url("/memories", ns=namespace, before=page.next_before, **values)
        more = f'<p><a rel=next href="{e(older)}">Older →</a></p>'
    table = (f"<table><tr><th>id</th><th>kind</th><th>tier</th><th>imp.</th><th>created</th>"
             f"<th>tags</th><th>content</th></tr>{rows}</table>" if rows
             else "<p class=muted>No memories match.</p>")
    return layout(f"Memories of {namespace}", filter_form(namespace, values) + table + more,
                  namespace, namespaces)


def _row(m: Memory) -> str:
    return (f'<tr><td><a href="{e(url("/memory/" + m.id, ns=m.namespace))}">'
            f"<code>{e(m.id[:10])}</code></a></td><td class=kind>{e(m.kind.value)}</td>"
            f"<td class=tier>{e(m.memory_type.value)}</td>"
            f"<td>{m.importance:.2f}</td><td>{e(when(m.created_at))}</td>"
            f"<td>{e(', '.join(m.tags))}</td>"
            f"<td class=text>{e(preview(m.content, PREVIEW_CHARS))}</td></tr>")


def search_results(namespace: str, namespaces: Sequence[str], results: Sequence[ScoredMemory],
                   values: Mapping[str, str], weights: Weights) -> str:
    rows = "".join(
        f'<tr><td>{i}</td><td><a href="{e(_scored_link(r, values))}">'
        f"<code>{e(r.memory.id[:10])}</code></a></td><td>{parts_bar(r, weights)}</td>"
        f"<td class=kind>{e(r.memory.kind.value)}</td>"
        f"<td class=tier>{e(r.memory.memory_type.value)}</td>"
        f"<td class=text>{e(preview(r.memory.content, PREVIEW_CHARS))}</td></tr>"
        for i, r in enumerate(results, 1))
    table = (f"{legend(weights)}<table><tr><th>#</th><th>id</th><th>composite = its four "
             f"weighted parts</th><th>kind</th><th>tier</th><th>content</th></tr>{rows}"
             "</table>"
             if rows else "<p class=muted>Nothing matched.</p>")
    ignored = [k for k in ("entity", "source", "since", "until") if values.get(k)]
    note = (f"<p class=muted>Search narrows by kind, tier and tag; {e(', '.join(ignored))} "
            "filter the list only (clear the search to use them).</p>" if ignored else "")
    return layout(f"Search in {namespace}", filter_form(namespace, values) + note + table,
                  namespace, namespaces)


def _scored_link(r: ScoredMemory, values: Mapping[str, str]) -> str:
    """The memory's page, scored against the same query (so semantic is not zero)."""
    return url("/memory/" + r.memory.id, ns=r.memory.namespace, q=values.get("q"))


def _weights(w: Weights) -> tuple[float, float, float, float]:
    return (w.semantic, w.importance, w.recency, w.access)


def weighted_parts(r: ScoredMemory, weights: Weights) -> dict[str, float]:
    b = r.breakdown
    values = (b.semantic_similarity, b.importance, b.recency, b.access_frequency)
    return {p: w * v for p, w, v in zip(PARTS, _weights(weights), values, strict=True)}


def legend(weights: Weights) -> str:
    """Which colour of a score bar is which weighted part (the bar is their sum)."""
    keys = " ".join(f'<span style="color:{COLOURS[p]}">■ {p} × {w:g}</span>'
                    for p, w in zip(PARTS, _weights(weights), strict=True))
    return (f'<p class="legend">{keys} <span class=muted>— the score bar\'s parts, left to '
            "right; their sum is the composite</span></p>")


def parts_bar(r: ScoredMemory, weights: Weights, width: int = 200) -> str:
    parts = weighted_parts(r, weights)
    x = 0.0
    rects = []
    for name, value in parts.items():
        rects.append(f'<rect x="{x:.1f}" y="0" width="{value * width:.1f}" height="12" '
                     f'fill="{COLOURS[name]}"><title>{name} {value:.3f}</title></rect>')
        x += value * width
    numbers = " + ".join(f"{v:.3f}" for v in parts.values())
    return (f'<svg width="{width}" height="12" role="img" aria-label="score parts">'
            f'{"".join(rects)}</svg><br><b>{r.breakdown.composite:.3f}</b> = '
            f'<span class="muted parts">{numbers}</span>')


# ---------------------------------------------------------------------- one memory


def memory_page(result: InspectResult, weights: Weights, csrf: str,
                namespaces: Sequence[str], note: str | None = None) -> str:
    m = result.memory
    b = result.breakdown
    scored = ScoredMemory(memory=m, score=b.composite, breakdown=b)
    meta = json.dumps(m.metadata, indent=2, ensure_ascii=False, sort_keys=True)
    fields = "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in (
        ("id", f"<code>{e(m.id)}</code>"), ("namespace", e(m.namespace)),
        ("author", e(m.shown_author)),
        ("kind", f'{e(m.kind.value)} <span class=muted>what it is; the collector never '
                 "changes it</span>"),
        ("tier", f'{e(m.memory_type.value)} <span class=muted>where the collector keeps it '
                 "now</span>"),
        ("importance", f'{m.importance:.2f} <span class=muted>what makes it last: an '
                       "important memory is never demoted for age alone</span>"),
        ("tags", e(", ".join(m.tags)) or "–"),
        ("linked entities", e(", ".join(m.linked_entities)) or "–"),
        ("tokens", f"{m.token_count:,}"), ("accesses", f"{m.access_count:,}"),
        ("created", e(when(m.created_at))), ("last accessed", e(when(m.accessed_at))),
        ("session", e(m.session_id or "–")),
        ("superseded by", _memory_link(m.superseded_by, m.namespace)),
        ("score now", parts_bar(scored, weights) + legend(weights)),
    ))
    target = m.memory_type.value if result.predicted_tier is None else (
        result.predicted_tier.value)
    gc = (f"<p>Next GC: <b>{e(result.gc_action)}</b>"
          + (f" to the {e(target)} tier" if result.gc_action not in ("keep", "delete", "merge")
             else "")
          + f"<br><span class=muted>{e(result.gc_reason)}</span></p>")
    body = (
        f'<pre class="content" id="content">{e(m.content)}</pre>'
        f"<table>{fields}</table><h2>Metadata</h2><pre class=content>{e(meta)}</pre>"
        f"<h2>What GC would do</h2>{gc}<h2>Lineage</h2>{timeline(result.lineage)}"
        f"<h2>Actions</h2>{_actions(m, csrf)}"
    )
    return layout(f"Memory {m.id[:10]}", body, m.namespace, namespaces, note)


def _memory_link(memory_id: str | None, namespace: str) -> str:
    if memory_id is None:
        return "–"
    link = url("/memory/" + memory_id, ns=namespace)
    return f'<a href="{e(link)}"><code>{e(memory_id)}</code></a>'


def timeline(events: Iterable[LineageEvent]) -> str:
    items = []
    for ev in events:
        tiers = ""
        if ev.from_tier or ev.to_tier:
            tiers = (f" {e(ev.from_tier.value if ev.from_tier else '·')} → "
                     f"{e(ev.to_tier.value if ev.to_tier else '·')}")
        count = f" ×{ev.count:,} (last {e(when(ev.last_at))})" if (
            ev.count > 1 and ev.last_at) else ""
        score = f" score {ev.score:.3f}" if ev.score is not None else ""
        items.append(f"<li><b>{e(ev.event)}</b>{tiers}{count} "
                     f"<span class=muted>{e(when(ev.at))}{score}</span>"
                     f"<br>{e(ev.reason)}</li>")
    return f'<ol class=timeline>{"".join(items)}</ol>' if items else "<p>No events.</p>"


def _form(action: str, csrf: str, inner: str, button: str, *, cls: str = "") -> str:
    return (f'<form method=post action="{e(action)}"{" class=" + cls if cls else ""}>'
            f'<input type=hidden name=csrf value="{e(csrf)}">{inner}'
            f"<button>{e(button)}</button></form>")


def _actions(m: Memory, csrf: str) -> str:
    base = f"/memory/{m.id}"
    ns = f'<input type=hidden name=ns value="{e(m.namespace)}">'
    tiers = _options(m.memory_type.value, (t.value for t in MemoryType))
    kinds = _options(m.kind.value, (k.value for k in MemoryKind))
    edit = _form(base + "/edit", csrf, (
        f"<fieldset><legend>Edit in place</legend>{ns}"
        f'<textarea name=content aria-label=content>{e(m.content)}</textarea>'
        f'<label>importance <input name=importance type=number min=0 max=1 step=0.01 '
        f'value="{m.importance:g}"></label>'
        f"<label>kind <select name=kind>{kinds}</select></label>"
        f"<label>tier <select name=memory_type>{tiers}</select></label>"
        f'<label>tags <input name=tags value="{e(", ".join(m.tags))}"></label>'
        f'<label>entities <input name=linked_entities '
        f'value="{e(", ".join(m.linked_entities))}"></label>'), "save edit")
    pin = _form(base + "/pin", csrf, ns, "pin (importance 1.0)", cls="inline")
    supersede = _form(base + "/supersede", csrf, (
        f"<fieldset><legend>Supersede with a correction (it keeps this memory's kind, "
        f"importance, tags and entities)</legend>{ns}"
        '<textarea name=content aria-label="correction"></textarea>'), "store correction")
    forget = (f'<a href="{e(url(base + "/forget", ns=m.namespace))}">forget…</a>')
    return f"{edit}</fieldset>{pin} {forget}{supersede}</fieldset>"


def forget_confirm(m: Memory, csrf: str, namespaces: Sequence[str]) -> str:
    inner = f'<input type=hidden name=ns value="{e(m.namespace)}">'
    body = (f"<p>Forget this memory? It is deleted; its lineage is kept.</p>"
            f'<pre class="content">{e(m.content)}</pre>'
            + _form(f"/memory/{m.id}/forget", csrf, inner, "forget it", cls="inline")
            + f' <a href="{e(url("/memory/" + m.id, ns=m.namespace))}">cancel</a>')
    return layout(f"Forget {m.id[:10]}?", body, m.namespace, namespaces)


def deleted_page(memory_id: str, events: Sequence[LineageEvent], namespace: str,
                 namespaces: Sequence[str], note: str | None = None) -> str:
    body = (f"<p>Memory <code>{e(memory_id)}</code> is no longer stored. Its lineage:</p>"
            f"{timeline(events)}")
    return layout(f"Memory {memory_id[:10]} (deleted)", body, namespace, namespaces, note)


# ---------------------------------------------------------------------------- GC


def gc_page(plan: GCPreview, window: int, windows: Sequence[int], total: int, csrf: str,
            namespaces: Sequence[str], done: GCResult | None = None) -> str:
    groups = (("merge", plan.to_merge), ("delete", plan.to_delete),
              ("archive", plan.to_archive), ("demote", plan.to_demote),
              ("promote", plan.to_promote))
    sections = "".join(_decisions(action, items, plan.namespace) for action, items in groups
                       if items)
    scope = (f"all {total:,} memories" if total <= window else
             f"the next {window:,} of {total:,} memories (GC rotates through the namespace; "
             "apply again for the next window)")
    applied = ""
    if done is not None:
        applied = (f'<p class=note role=status>Applied: {done.promoted} promoted, '
                   f"{done.demoted} demoted, {done.archived} archived, {done.deleted} deleted, "
                   f"{done.merged} merged. {e(done.summary)}</p>")
    hidden = (f'<input type=hidden name=ns value="{e(plan.namespace)}">'
              f'<input type=hidden name=window value="{window}">')
    apply = _form("/gc/apply", csrf, hidden, "apply this plan") if plan.changes() else ""
    sizes = " ".join(
        f"<b>{w:,}</b>" if w == window else
        f'<a href="{e(url("/gc", ns=plan.namespace, window=w))}">{w:,}</a>' for w in windows)
    sizes = f"<p class=muted>Memories per pass: {sizes}</p>" if total > windows[0] else ""
    body = (f"{applied}{sizes}<p>Plan over {scope}: {e(plan.summary)}; "
            f"{len(plan.to_keep):,} kept, token change {plan.token_delta:+,}.</p>"
            f"{sections or '<p>Nothing to change.</p>'}{apply}")
    return layout(f"Garbage collection in {plan.namespace}", body, plan.namespace, namespaces)


def _decisions(action: str, items: Sequence[GCDecision], namespace: str) -> str:
    rows = "".join(
        f'<tr><td><a href="{e(url("/memory/" + d.memory_id, ns=namespace))}">'
        f"<code>{e(d.memory_id[:10])}</code></a></td><td class=tier>{e(d.from_tier.value)}"
        f"{' → ' + e(d.to_tier.value) if d.to_tier else ''}</td>"
        f"<td>{d.breakdown.composite:.3f}</td><td>{e(d.reason)}</td>"
        f"<td class=text>{e(d.content_preview)}</td></tr>" for d in items)
    return (f"<h2>{e(action)} ({len(items):,})</h2><table><tr><th>id</th><th>tier</th>"
            f"<th>score</th><th>why</th><th>content</th></tr>{rows}</table>")

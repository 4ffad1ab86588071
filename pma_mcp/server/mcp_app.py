"""The MCP App (`ui://`) view of recall results and of one memory, for clients that render
apps (Claude Desktop, VS Code, ...).

The host renders this document in a sandboxed iframe and posts the tool's result to it
(`ui/notifications/tool-result`, JSON-RPC over postMessage); the script draws
`structuredContent` of `recall` (results with their weighted score parts) or `inspect` (the
memory, its breakdown, GC prediction and lineage). Text goes in with `textContent` only, never
as markup, so memory text stays text. Clients without app support ignore the link and read
the same text/structured result as before.
"""

from __future__ import annotations

import json
from typing import Any

from pma_mcp.core.scoring import Weights

APP_URI = "ui://pma/memory-view.html"


def tool_meta() -> dict[str, Any]:
    """`_meta` of a tool whose results this view renders (a fresh dict per tool)."""
    return {"ui": {"resourceUri": APP_URI}}

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pma memory</title>
<style>
body{font:13px/1.45 system-ui,sans-serif;margin:.6em;color:#1d232b}
.item{border-bottom:1px solid #e2e5ea;padding:.4em 0}
.content{white-space:pre-wrap;word-break:break-word}
.muted{color:#66707c}.bar{display:flex;width:200px;height:10px;background:#eef1f5}
.bar span{display:block;height:10px}
.semantic{background:#3b6fb6}.importance{background:#d08a1f}
.recency{background:#3f9b5a}.access{background:#8a5bb5}
ol{padding-left:1.2em}
</style></head>
<body><div id="view" class="muted">Waiting for a recall or inspect result…</div>
<script>
"use strict";
const WEIGHTS = __WEIGHTS__;
const PARTS = [["semantic", "semantic_similarity"], ["importance", "importance"],
               ["recency", "recency"], ["access", "access_frequency"]];
let nextId = 1;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function parts(b) {
  const box = el("div");
  const bar = el("div", "bar");
  const numbers = [];
  for (const [name, key] of PARTS) {
    const value = WEIGHTS[name] * Number(b[key] || 0);
    const span = el("span", name);
    span.style.width = (value * 200).toFixed(1) + "px";
    span.title = name + " " + value.toFixed(3);
    bar.appendChild(span);
    numbers.push(value.toFixed(3));
  }
  box.appendChild(bar);
  box.appendChild(el("div", "muted parts",
    Number(b.composite).toFixed(3) + " = " + numbers.join(" + ")));
  return box;
}

function recall(data) {
  const view = el("div");
  view.appendChild(el("h3", "", data.results.length + " memories"));
  for (const r of data.results) {
    const item = el("div", "item");
    item.appendChild(el("div", "muted", r.id.slice(0, 10) + " · " + r.memory_type +
      " · importance " + Number(r.importance).toFixed(2)));
    item.appendChild(el("div", "content", r.content));
    item.appendChild(parts(r.breakdown));
    view.appendChild(item);
  }
  return view;
}

function inspect(data) {
  const m = data.memory;
  const view = el("div");
  view.appendChild(el("h3", "", "Memory " + m.id.slice(0, 10) + " · " + m.memory_type));
  view.appendChild(el("div", "content", m.content));
  view.appendChild(parts(data.breakdown));
  view.appendChild(el("p", "", "Next GC: " + data.gc_action + " — " + data.gc_reason));
  const list = el("ol", "lineage");
  for (const ev of data.lineage) {
    const tiers = ev.from_tier || ev.to_tier ?
      " " + (ev.from_tier || "·") + " → " + (ev.to_tier || "·") : "";
    const count = ev.count > 1 ? " ×" + ev.count : "";
    list.appendChild(el("li", "", ev.event + tiers + count + " (" + ev.at + ") " + ev.reason));
  }
  view.appendChild(list);
  return view;
}

function render(result) {
  const data = result && (result.structuredContent || result.structured_content);
  const target = document.getElementById("view");
  if (!data) return;
  target.className = "";
  target.replaceChildren(Array.isArray(data.results) ? recall(data)
    : data.memory ? inspect(data) : el("div", "muted", "Nothing to show."));
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const msg = event.data;
  if (!msg || msg.jsonrpc !== "2.0") return;
  if (msg.id === initId && !msg.method) {
    window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/initialized"}, "*");
  } else if (msg.method === "ui/notifications/tool-result") {
    render(msg.params && (msg.params.result || msg.params));
  }
});

const initId = nextId++;
window.parent.postMessage({jsonrpc: "2.0", id: initId, method: "ui/initialize", params: {
  appInfo: {name: "pma memory view", version: "1"}, appCapabilities: {},
  protocolVersion: "2026-01-26"}}, "*");
</script></body></html>
"""


def document(weights: Weights) -> str:
    """The app's HTML with this server's score weights (PMA_WEIGHTS) for the part bars."""
    values = {"semantic": weights.semantic, "importance": weights.importance,
              "recency": weights.recency, "access": weights.access}
    return _TEMPLATE.replace("__WEIGHTS__", json.dumps(values))

// tablelog ui: one page, three views chosen by the URL's hash, each refreshed by polling
// the JSON endpoints (no reload). Values are put in with textContent, never as HTML.
"use strict";

const params = new URLSearchParams(location.search);
let refreshMs = Number(params.get("refresh")) || null;  // ?refresh=MS, else the server's
let timer = null;
let chart = null;
const follow = { table: null, columns: null, consistency: null, position: null, rows: [] };
const CHANGES_SHOWN = 100;

const $ = (id) => document.getElementById(id);

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "-" : String(text);
  if (cls) td.className = cls;
  return td;
}

// "2026-11-23T20:02:22.973+00:00" -> "2026-11-23 20:02:22" (the columns say UTC)
function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 19) : null;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function row(cells, attrs) {
  const tr = document.createElement("tr");
  tr.append(...cells);
  for (const [k, v] of Object.entries(attrs || {})) tr.setAttribute(k, v);
  return tr;
}

function mark(health) {
  const span = document.createElement("span");
  const m = health ? health.mark : "unknown";
  span.className = "mark " + m;
  span.textContent = m;
  span.dataset.mark = m;
  if (health && health.reasons.length) span.title = health.reasons.join("\n");
  return span;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || body.detail || response.statusText);
  return body;
}

function logState(log) {
  if (!log) return { text: "no log", cls: "muted" };
  if (log.reachable === false) return { text: "unreachable: " + log.error, cls: "unreachable log-state" };
  if (log.reachable === true) return { text: "reachable", cls: "log-state" };
  return { text: "-", cls: "log-state muted" };
}

// The table's rows: known from the snapshot (no primary key), or the last count's.
function rowsText(rows, counting) {
  if (counting && counting.state === "running") return "counting…";
  if (counting && counting.state === "error") return "count failed: " + counting.error;
  if (!rows) return "not counted";
  return rows.snapshot === null ? String(rows.count) : `${rows.count} (snapshot ${rows.snapshot})`;
}

function verifyText(v) {
  if (!v) return "-";
  if (v.state === "running") return "running…";
  if (v.state === "error") return "error: " + v.error;
  return v.summary;
}

// -- warehouse -------------------------------------------------------------------------

async function showWarehouse() {
  const doc = await api("/api/warehouse");
  settings(doc);
  const rows = doc.tables.map((t) => {
    const link = document.createElement("a");
    link.href = "#/table/" + encodeURIComponent(t.table);
    link.textContent = t.table;
    const name = document.createElement("td");
    name.append(link);
    const health = document.createElement("td");
    health.className = "health";
    health.append(mark(t.health));
    if (t.error) return row([name, health, cell("error: " + t.error, "unreachable")], { "data-table": t.table });
    const log = t.log || {};
    const state = logState(t.log);
    return row([
      name, health, cell(log.system || "none", "log-system"), cell(log.topic), cell(log.partitions, "num"),
      cell(log.consistency), cell(t.latest_snapshot, "num latest"), cell(when(t.last_commit_time)),
      cell(t.snapshots_per_minute, "num"), cell(state.text, state.cls), cell(verifyText(t.verify)),
    ], { "data-table": t.table });
  });
  fill($("tables").tBodies[0], rows);
}

// -- table -----------------------------------------------------------------------------

async function showTable(name) {
  const doc = await api("/api/tables/" + encodeURIComponent(name) + "?limit=50");
  $("table-name").textContent = doc.table;
  $("table-health").replaceChildren(mark(doc.health));
  $("health-reasons").textContent = doc.health.reasons.join("; ");
  $("changes-link").href = "#/changes/" + encodeURIComponent(doc.table);
  const latest = doc.snapshots.length ? doc.snapshots[0].id : null;
  $("latest-snapshot").textContent = latest === null ? "none" : String(latest);
  $("table-rate").textContent = doc.snapshots_per_minute === null ? "-" : String(doc.snapshots_per_minute);
  $("primary-key").textContent = doc.primary_key.join(", ") || "(none)";
  $("partition-keys").textContent = (doc.partition_keys || []).join(", ") || "(none)";
    $("buckets").textContent = doc.buckets === -1 ? "dynamic" : String(doc.buckets);
  $("table-rows").textContent = rowsText(doc.rows, doc.row_count);
  $("verify-result").replaceChildren(...verifyNodes(doc.verify));

  const log = doc.log;
  const state = logState(log);
  $("log-summary").textContent = log ? `${log.system}, topic ${log.topic}, ${log.partitions} partition(s), ` +
    `${log.consistency}: ${state.text}` : "no log (log.system = none)";
  $("log-summary").className = state.cls.includes("unreachable") ? "unreachable" : "muted";
  fill($("positions").tBodies[0], ((log && log.retention) || []).map((r) => row([
    cell(r.partition, "num"), cell(r.earliest, "num"), cell(log.needed_pending ? "reading…" : r.needed, "num"), cell(r.end, "num end"),
    cell(r.committed_end, "num committed-end"), cell(r.uncommitted, "num uncommitted"),
  ], { "data-partition": r.partition })));
  fill($("writers").tBodies[0], doc.writers.map((w) => row([
    cell(w.writer, "mono"), cell(w.last_commit_identifier, "num"), cell(w.snapshot, "num"), cell(when(w.time)),
  ])));
  fill($("consumers").tBodies[0], doc.consumers.map((c) => row([
    cell(c.id), cell(c.next_snapshot, "num"),
    cell(c.snapshots_behind + (c.stranded ? " (its snapshots expired)" : ""), "num"), cell(when(c.last_seen)),
  ])));
  fill($("schema").tBodies[0], doc.schema.map((f) => row([cell(f.name), cell(f.type), cell(f.nullable)])));
  fill($("schema-history").tBodies[0], doc.schema_history.map((s) => row([
    cell(s.id, "num"), cell(s.fields.map((f) => `${f.name} ${f.type}`).join(", ")),
  ])));
  fill($("options").tBodies[0], Object.entries(doc.options).map(([k, v]) => row([cell(k, "mono"), cell(v, "mono")])));
  fill($("snapshots").tBodies[0], doc.snapshots.map((s) => row([
    cell(s.id, "num"), cell(when(s.time)), cell(s.kind), cell(s.file_records, "num"), cell(s.log_records, "num"),
    cell(s.relayed_snapshots.length ? `relay of ${s.relayed_snapshots.join(", ")}`
      : s.writer ? s.writer.slice(0, 12) : s.written_by, "mono"), cell(s.commit_identifier, "num"),
    cell(s.log_end_positions ? JSON.stringify(s.log_end_positions) : null, "mono"),
  ], { "data-snapshot": s.id })));
  drawTimeline(doc.snapshots);
}

function verifyNodes(v) {
  if (!v) return [];
  const head = document.createElement("div");
  head.id = "verify-summary";
  head.dataset.state = v.state;
  head.className = v.state === "done" ? (v.consistent ? "" : "unreachable") : "muted";
  head.textContent = "verify: " + verifyText(v);
  const nodes = [head];
  if (v.state === "done" && !v.consistent) {
    const list = document.createElement("ul");
    const items = [
      ...v.missing_from_log.map((r) => "in the table, not in the log: " + JSON.stringify(r)),
      ...v.unexpected_in_log.map((r) => "in the log, not in the table: " + JSON.stringify(r)),
      ...v.differing.map((d) => `differs: table ${JSON.stringify(d.table)} log ${JSON.stringify(d.log)}`),
    ];
    for (const text of items) {
      const li = document.createElement("li");
      li.textContent = text;
      list.append(li);
    }
    nodes.push(list);
  }
  return nodes;
}

function drawTimeline(snapshots) {
  const ordered = snapshots.slice().reverse();
  const labels = ordered.map((s) => String(s.id));
  const data = [ordered.map((s) => s.file_records), ordered.map((s) => s.log_records), ordered.map((s) => s.commit_ms)];
  if (typeof Chart === "undefined") return;
  if (chart === null) {
    chart = new Chart($("timeline"), {
      type: "bar",
      data: { labels, datasets: [
        { label: "records in files (before merge)", data: data[0], type: "line", yAxisID: "records-in-files", borderColor: "#2f6fde",
          pointRadius: 0 },
        { label: "log records committed", data: data[1], yAxisID: "records", backgroundColor: "#7cc48a" },
        { label: "commit latency (ms)", data: data[2], type: "line", yAxisID: "ms",
          borderColor: "#d98b2b", pointRadius: 1 },
      ] },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: "snapshot" } },
          "records-in-files": { position: "left", beginAtZero: true, title: { display: true, text: "file records" } },
          records: { position: "right", beginAtZero: true, title: { display: true, text: "log records" } },
          ms: { position: "right", beginAtZero: true, title: { display: true, text: "ms" },
                     grid: { drawOnChartArea: false } },
        },
      },
    });
  } else {
    chart.data.labels = labels;
    data.forEach((d, i) => { chart.data.datasets[i].data = d; });
    chart.update("none");
  }
}

// -- changelog -------------------------------------------------------------------------

async function showChanges(name) {
  const columns = $("columns").value.trim();
  const consistency = $("consistency").value;
  if (follow.table !== name || follow.columns !== columns || follow.consistency !== consistency) {
    Object.assign(follow, { table: name, columns, consistency, position: null, rows: [] });
  }
  $("changes-table").textContent = name;
  $("changes-table").href = "#/table/" + encodeURIComponent(name);
  const query = new URLSearchParams({ limit: String(CHANGES_SHOWN), consistency });
  if (columns) query.set("columns", columns);
  if (follow.position) query.set("position", follow.position);
  let doc;
  try {
    doc = await api(`/api/tables/${encodeURIComponent(name)}/changes?${query}`);
    $("changes-error").textContent = "";
  } catch (err) {
    $("changes-error").textContent = String(err.message || err);
    return;
  }
  if (follow.table !== name || follow.columns !== columns || follow.consistency !== consistency) return;
  follow.position = doc.position;
  follow.rows = doc.changes.slice().reverse().concat(follow.rows).slice(0, CHANGES_SHOWN);
  $("change-count").textContent = String(follow.rows.length);
  fill($("changes").tBodies[0], follow.rows.map((c) => row([
    cell(c.snapshot, "num"), cell(c.partition, "num"), cell(c.position, "num"), cell(c.kind),
    cell(JSON.stringify(c.row), "mono change-row"),
  ])));
}

// -- routing and polling ---------------------------------------------------------------

function settings(doc) {
  $("warehouse-path").textContent = doc.warehouse;
  $("exposed-banner").classList.toggle("hidden", !doc.exposed);
  if (refreshMs === null) refreshMs = doc.refresh_ms;
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "table" && parts[1]) return { page: "table-page", run: () => showTable(parts[1]) };
  if (parts[0] === "changes" && parts[1]) return { page: "changes-page", run: () => showChanges(parts[1]) };
  return { page: "warehouse-page", run: showWarehouse };
}

async function refresh() {
  clearTimeout(timer);
  const current = route();
  for (const id of ["warehouse-page", "table-page", "changes-page"]) $(id).classList.toggle("hidden", id !== current.page);
  if (current.page !== "table-page" && chart !== null) { chart.destroy(); chart = null; }
  try {
    await current.run();
    $("page-error").classList.add("hidden");
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  } catch (err) {
    $("page-error").textContent = String(err.message || err);
    $("page-error").classList.remove("hidden");
  }
  timer = setTimeout(refresh, refreshMs || 2000);
}

$("verify").addEventListener("click", async () => {
  const name = route().page === "table-page" ? $("table-name").textContent : null;
  if (!name) return;
  await api(`/api/tables/${encodeURIComponent(name)}/verify`, { method: "POST" });
  refresh();
});
$("count-rows").addEventListener("click", async () => {
  const name = route().page === "table-page" ? $("table-name").textContent : null;
  if (!name) return;
  await api(`/api/tables/${encodeURIComponent(name)}/rows`, { method: "POST" });
  refresh();
});
$("columns").addEventListener("change", refresh);
$("consistency").addEventListener("change", refresh);
window.addEventListener("hashchange", refresh);
api("/api/settings").then(settings).catch(() => {}).finally(refresh);

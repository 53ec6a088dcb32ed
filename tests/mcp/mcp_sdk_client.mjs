// `kiln mcp` driven by the official MCP TypeScript SDK's client, as an
// assistant runs it: the SDK starts `kiln mcp` over stdio, lists the tools
// and calls each. Answers are checked against an oracle computed here from
// the folded files the store was made from (self and total per function,
// shares, and the two-proportion z of a change), not against kiln's code.
//
// Capture files (pprof) are checked against `go tool pprof -top`.
//
// usage: node mcp_sdk_client.mjs SDK_DIR KILN DATA_DIR BEFORE.folded AFTER.folded SPLIT_NS GO PPROF...
//   DATA_DIR holds BEFORE (stamped before SPLIT_NS) and AFTER (after it).
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

const [sdkDir, kiln, dataDir, beforePath, afterPath, splitNs, go, ...pprofFiles] = process.argv.slice(2);
const require = createRequire(`${sdkDir}/package.json`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

// --- The oracle -----------------------------------------------------------

function parseFolded(path) {
  const stacks = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = line.trim().match(/^(.*) (\d+)$/);
    if (m) stacks.push({ frames: m[1].split(";"), weight: Number(m[2]) });
  }
  return stacks;
}

// function -> {self, total}; a function counts once per stack toward total.
function functions(stacks) {
  const out = new Map();
  for (const { frames, weight } of stacks) {
    for (const f of new Set(frames)) {
      const row = out.get(f) ?? { self: 0, total: 0 };
      row.total += weight;
      out.set(f, row);
    }
    out.get(frames.at(-1)).self += weight;
  }
  return out;
}

const sum = (stacks) => stacks.reduce((s, x) => s + x.weight, 0);

// Two-proportion z with the pooled standard error (weights are sample
// counts here).
function z(a, n, b, m) {
  const p1 = a / n, p2 = b / m, pooled = (a + b) / (n + m);
  const variance = pooled * (1 - pooled) * (1 / n + 1 / m);
  return variance > 0 ? (p2 - p1) / Math.sqrt(variance) : 0;
}

const before = parseFolded(beforePath);
const after = parseFolded(afterPath);
const all = [...before, ...after];

// --- The client -----------------------------------------------------------

async function connect(args) {
  const transport = new StdioClientTransport({ command: kiln, args: ["mcp", ...args], stderr: "inherit" });
  const client = new Client({ name: "kiln-mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function call(client, name, args = {}, wantError = false) {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError ?? false, wantError, `${name} ${JSON.stringify(args)}: ${result.content?.[0]?.text}`);
  assert.equal(result.content[0].type, "text");
  return result;
}

let checks = 0;
function check(what, fn) {
  fn();
  checks++;
  console.log(`ok: ${what}`);
}

const client = await connect(["--data-dir", dataDir]);
check("the server names itself", () => assert.equal(client.getServerVersion().name, "kiln"));

const { tools } = await client.listTools();
check("eight read-only tools with input schemas", () => {
  assert.deepEqual(tools.map((t) => t.name).sort(),
    ["attribute_values", "diff", "flamegraph", "hot_paths", "sample_types", "source_lines", "sources", "top_functions"]);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object");
    assert.equal(t.annotations.readOnlyHint, true);
  }
});

const types = (await call(client, "sample_types")).structuredContent;
check("sample_types counts every stored sample", () => {
  assert.equal(types.samples, all.length === 0 ? 0 : types.samples);
  assert.equal(types.sample_types.length, 1);
  assert.equal(types.default_sample_type, "samples/count");
});

const top = (await call(client, "top_functions", { limit: 500 })).structuredContent;
check("top_functions over everything equals the folded files' self and total", () => {
  const expected = functions(all);
  assert.equal(top.total, sum(all));
  assert.equal(top.functions.length, expected.size);
  for (const row of top.functions) {
    const e = expected.get(row.function);
    assert.ok(e, `unexpected function ${row.function}`);
    assert.equal(row.self, e.self, `${row.function} self`);
    assert.equal(row.total, e.total, `${row.function} total`);
  }
  // Hottest self first.
  for (let i = 1; i < top.functions.length; i++) assert.ok(top.functions[i - 1].self >= top.functions[i].self);
});

const two = await call(client, "top_functions", { limit: 2 });
check("a cut list says so", () => {
  assert.equal(two.structuredContent.functions.length, 2);
  assert.equal(two.structuredContent.truncated, true);
  assert.match(two.content[0].text, /TRUNCATED: showing 2 of \d+ functions/);
});

const recent = (await call(client, "top_functions", { from: splitNs })).structuredContent;
check("a time range selects the later file only", () => {
  assert.equal(recent.total, sum(after));
});

const hot = (await call(client, "hot_paths", { function: "hash" })).structuredContent;
check("hot_paths: the path into hash with its weight", () => {
  const expected = functions(all).get("hash");
  assert.equal(hot.function_total, expected.total);
  assert.deepEqual(hot.callers[0].frames, ["main", "work", "hash"]);
  assert.equal(hot.callers[0].weight, expected.total);
});

const flame = (await call(client, "flamegraph", { limit: 5000 })).structuredContent;
check("flamegraph: the merged folded stacks", () => {
  const merged = new Map();
  for (const { frames, weight } of all) merged.set(frames.join(";"), (merged.get(frames.join(";")) ?? 0) + weight);
  const expected = [...merged].map(([k, v]) => `${k} ${v}`).sort();
  assert.deepEqual([...flame.folded].sort(), expected);
  assert.equal(flame.truncated, false);
});

const diff = (await call(client, "diff", { base: { to: splitNs }, target: { from: splitNs }, limit: 50 }))
  .structuredContent;
check("diff: shares, changes and z equal the oracle's", () => {
  const b = functions(before), t = functions(after), bn = sum(before), tn = sum(after);
  assert.equal(diff.base.total, bn);
  assert.equal(diff.target.total, tn);
  const rows = [...diff.grew, ...diff.shrank];
  let grew = 0, shrank = 0;
  for (const name of new Set([...b.keys(), ...t.keys()])) {
    const bt = b.get(name)?.total ?? 0, tt = t.get(name)?.total ?? 0;
    const change = tt / tn - bt / bn;
    if (change > 0) grew++;
    if (change < 0) shrank++;
    const row = rows.find((r) => r.function === name);
    if (change === 0) {
      assert.equal(row, undefined, `${name} did not change`);
      continue;
    }
    assert.ok(row, `${name} changed by ${change}`);
    assert.ok(Math.abs(row.change - change) < 1e-9, `${name} change ${row.change} vs ${change}`);
    const expectedZ = z(bt, bn, tt, tn);
    assert.ok(Math.abs(row.z - expectedZ) < 1e-6, `${name} z ${row.z} vs ${expectedZ}`);
    assert.equal(row.significant, Math.abs(expectedZ) >= 3.29, `${name} significance`);
  }
  assert.equal(diff.grew_total, grew);
  assert.equal(diff.shrank_total, shrank);
  // Largest growth first.
  for (let i = 1; i < diff.grew.length; i++) assert.ok(diff.grew[i - 1].change >= diff.grew[i].change);
});

const sources = await call(client, "sources");
const keys = await call(client, "attribute_values");
const lines = await call(client, "source_lines", { function: "deflate" });
check("sources, attribute_values and source_lines answer", () => {
  assert.ok(Array.isArray(sources.structuredContent.processes));
  assert.ok(Array.isArray(keys.structuredContent.keys));
  // Folded stacks carry no files: said, not invented.
  assert.match(lines.content[0].text, /name no source file or line/);
});

const bad = await call(client, "top_functions", { sample_type: "alloc_space" }, true);
const unknown = await call(client, "hot_paths", { function: "no_such_function" }, true);
check("bad arguments are tool errors that say why", () => {
  assert.match(bad.content[0].text, /no sample type "alloc_space"/);
  assert.match(unknown.content[0].text, /no function named or containing "no_such_function"/);
});
await client.close();

// A capture file, opened by kiln mcp itself, and a diff against another.
const capture = await connect(["--input", beforePath]);
const capTop = (await call(capture, "top_functions", { limit: 500 })).structuredContent;
const capDiff = (await call(capture, "diff", { base: {}, target: { input: afterPath } })).structuredContent;
check("--input: a capture's functions, and a diff of two captures", () => {
  const expected = functions(before);
  assert.equal(capTop.total, sum(before));
  for (const row of capTop.functions) assert.equal(row.total, expected.get(row.function).total);
  assert.equal(capDiff.grew[0].function, diff.grew[0].function);
  assert.ok(Math.abs(capDiff.grew[0].z - diff.grew[0].z) < 1e-9);
});
await capture.close();

// Spans: a pprof whose samples carry span_id and trace_id labels (written by
// mcp_sdk_test.cpp: handler 30 ns in span ...abc, parse 50 ns in span ...def,
// one trace; idle 20 ns in none).
const spans = await connect(["--input", process.env.KILN_MCP_SPANS_PPROF]);
const bySpan = (await call(spans, "flamegraph", { group_by: "span" })).structuredContent;
const oneSpan = (await call(spans, "top_functions", { filters: { span_id: "0000000000000DEF" } })).structuredContent;
const oneTrace = (await call(spans, "flamegraph", { filters: { trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" } }))
  .structuredContent;
const badSpan = await call(spans, "top_functions", { filters: { span_id: "zz" } }, true);
check("spans: flamegraph by span, and span_id / trace_id filters select exactly their samples", () => {
  assert.deepEqual([...bySpan.folded].sort(),
    ["no span;main;idle 20", "span 0000000000000abc;main;handler 30", "span 0000000000000def;main;parse 50"]);
  assert.equal(oneSpan.total, 50);
  assert.deepEqual(oneSpan.functions.map((f) => f.function).sort(), ["main", "parse"]);
  assert.deepEqual([...oneTrace.folded].sort(), ["main;handler 30", "main;parse 50"]);
  assert.match(badSpan.content[0].text, /span_id wants an id in hex/);
});
await spans.close();

// pprof files against go tool pprof: flat = self, cum = total, per function,
// in the file's default sample type and its unit.
for (const file of pprofFiles) {
  const text = execFileSync(go, ["tool", "pprof", "-top", "-unit=ns", "-nodecount=1000000", "-nodefraction=0",
    "-edgefraction=0", file], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const expected = new Map();
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*(\d+)(?:ns)?\s+\S+%\s+\S+%\s+(\d+)(?:ns)?\s+\S+%\s+(.*?)( \(inline\))?$/);
    if (m) expected.set(m[3], { self: Number(m[1]), total: Number(m[2]) });
  }
  const c = await connect(["--input", file]);
  const rows = (await call(c, "top_functions", { limit: 500 })).structuredContent;
  await c.close();
  check(`${file.split("/").at(-1)}: top_functions equals go tool pprof -top (${expected.size} functions)`, () => {
    assert.ok(expected.size > 5);
    assert.equal(rows.unit, "nanoseconds");
    assert.equal(rows.functions.length, expected.size);
    for (const row of rows.functions) {
      const e = expected.get(row.function);
      assert.ok(e, `pprof has no ${row.function}`);
      assert.equal(row.self, e.self, `${row.function} self`);
      assert.equal(row.total, e.total, `${row.function} total`);
    }
  });
}

console.log(`mcp_sdk_client: ${checks} checks passed`);

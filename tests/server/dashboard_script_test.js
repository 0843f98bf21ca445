// The dashboard page's own script, run by Node against two /metrics expositions taken two seconds
// apart, with the browser's document, fetch, timers and clock replaced by stand-ins: what it
// shows in each tile and table, and that a failed read says so.
// Usage: node dashboard_script_test.js <path to dashboard.html>
"use strict";
const assert = require("assert");
const fs = require("fs");
const vm = require("vm");

const html = fs.readFileSync(process.argv[2], "utf8");
const script = html.slice(html.indexOf("<script>") + 8, html.indexOf("</script>"));

const elements = new Map();
function element(id) {
  if (!elements.has(id)) {
    elements.set(id, {
      textContent: "", className: "", children: [], width: 960, height: 170,
      replaceChildren(...children) { this.children = children; },
      appendChild(child) { this.children.push(child); },
      getContext() {
        const ignored = () => {};
        return { clearRect: ignored, beginPath: ignored, moveTo: ignored, lineTo: ignored,
                 stroke: ignored, fillText: ignored };
      },
    });
  }
  return elements.get(id);
}
const rows = (id) => element(id).children.map((row) => row.children.map((cell) => cell.textContent));

const exposition = (allowed, denied, throttled, buckets, keys, forwarded) => `# HELP sluice_decisions_total Limit decisions by limit and result.
# TYPE sluice_decisions_total counter
sluice_decisions_total{limit="per-ip",result="allowed"} ${allowed}
sluice_decisions_total{limit="per-ip",result="denied"} ${denied}
sluice_decisions_total{limit="search",result="throttled"} ${throttled}
sluice_decisions_total{limit="a\\"b\\\\c",result="allowed"} 1
# TYPE sluice_decision_duration_seconds histogram
sluice_decision_duration_seconds_bucket{le="1e-05"} ${buckets[0]}
sluice_decision_duration_seconds_bucket{le="2.5e-05"} ${buckets[1]}
sluice_decision_duration_seconds_bucket{le="0.0001"} ${buckets[2]}
sluice_decision_duration_seconds_bucket{le="+Inf"} ${buckets[3]}
sluice_decision_duration_seconds_sum 0.001
sluice_decision_duration_seconds_count ${buckets[3]}
# TYPE sluice_degraded_decisions_total counter
sluice_degraded_decisions_total 0
# TYPE sluice_keys gauge
sluice_keys ${keys}
# TYPE sluice_config_reloads_total counter
sluice_config_reloads_total{result="ok"} 1
sluice_config_reloads_total{result="failed"} 0
# TYPE sluice_gateway_requests_total counter
sluice_gateway_requests_total{result="forwarded"} ${forwarded}
`;

// Two seconds apart: 20 more allowed, 4 denied, 2 throttled; 26 decisions, of which 12 took at
// most 10 us, 13 more at most 25 us, and one at most 100 us; 100 more forwarded.
const answers = [
  { ok: true, body: exposition(10, 0, 0, [5, 9, 10, 10], 3, 100) },
  { ok: true, body: exposition(30, 4, 2, [17, 34, 36, 36], 7, 200) },
  { ok: false, status: 503 },
];
let now = 0;
let next = null;
const context = {
  document: { getElementById: element,
              createElement: () => ({ textContent: "", children: [],
                                      appendChild(child) { this.children.push(child); } }) },
  fetch: async (url) => {
    assert.strictEqual(url, "/metrics");
    const answer = answers.shift();
    return { ok: answer.ok, status: answer.status,
             text: async () => answer.body };
  },
  setTimeout: (callback) => { next = callback; },
  performance: { now: () => now },
  JSON, Math, Number, Map, Set, Object, Date, Infinity, Error,
};
vm.createContext(context);

(async () => {
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  vm.runInContext(script, context);  // its first poll
  await settle();
  assert.strictEqual(element("decided").textContent, "", "nothing shown before a second poll");
  assert.match(element("status").textContent, /^live/);
  now += 2000;
  next();
  await settle();

  assert.strictEqual(element("decided").textContent, "13.0");
  assert.strictEqual(element("allowed").textContent, "10.0");
  assert.strictEqual(element("denied").textContent, "2.0");
  assert.strictEqual(element("throttled").textContent, "1.0");
  assert.strictEqual(element("shadow").textContent, "0.0");
  assert.strictEqual(element("p50").textContent, "<= 25 us");
  assert.strictEqual(element("p99").textContent, "<= 100 us");
  assert.strictEqual(element("degraded").textContent, "0.0");
  assert.strictEqual(element("keys").textContent, "7");
  assert.strictEqual(element("reloads").textContent, "1 / 0");
  assert.deepStrictEqual(rows("limits"), [
    ['a"b\\c', "0.0", "0.0", "0.0", "0.0", "1", "0"],  // a label's escapes undone
    ["per-ip", "10.0", "2.0", "0.0", "0.0", "30", "4"],
    ["search", "0.0", "0.0", "1.0", "0.0", "0", "0"],
  ]);
  assert.deepStrictEqual(rows("others"),
                         [['sluice_gateway_requests_total{result="forwarded"}', "50.0", "200"]]);

  now += 1000;
  next();
  await settle();
  assert.strictEqual(element("status").className, "down");
  assert.match(element("status").textContent, /cannot read \/metrics \(HTTP 503\)/);
  assert.strictEqual(typeof next, "function", "it polls again after a failure");
  console.log("dashboard script: all checks passed");
})().catch((error) => {
  console.error(error);
  process.exit(1);
});

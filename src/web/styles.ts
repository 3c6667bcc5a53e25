/**
 * The pages' one stylesheet, served as /assets/app.css (the Content-Security-Policy allows styles
 * from our origin only). Plain CSS, system fonts: nothing is fetched from elsewhere.
 */
export const APP_CSS = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #ffffff; --accent: #0b5cad; --pass: #1a7f37; --fail: #cf222e; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
header.site { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem 2rem; padding: 0.75rem 1.5rem; border-bottom: 1px solid var(--line); }
header.site .org { font-weight: 600; }
header.site nav ul { display: flex; gap: 1.25rem; list-style: none; margin: 0; padding: 0; }
header.site nav a[aria-current="page"] { font-weight: 600; text-decoration: none; color: var(--fg); }
header.site .account { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; color: var(--muted); }
main { padding: 1.5rem; max-width: 72rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; padding-bottom: 0.5rem; }
th, td { text-align: left; padding: 0.5rem 0.75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 0.875rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
/* A figure and its unit stay on one line ("116 ms", not "116 / ms"); so do badges and times. */
td.num, .badge, td time { white-space: nowrap; }
/* Narrow screens (375 px): names from uploads wrap anywhere rather than widen the page. */
h1, .crumbs, td:first-child { overflow-wrap: anywhere; }
/* A word longer than its line (a link shown whole, a channel's URL) breaks rather than widen the page; fields never outgrow it. */
body { overflow-wrap: break-word; }
input, select, textarea { max-width: 100%; }
@media (max-width: 40rem) {
  main { padding: 1rem; }
  header.site { padding: 0.75rem 1rem; }
  header.site .account { margin-left: 0; }
}
.result-passed { color: var(--pass); font-weight: 600; }
.result-failed { color: var(--fail); font-weight: 600; }
.muted { color: var(--muted); }
form.card { max-width: 26rem; display: grid; gap: 0.9rem; }
label { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0.25rem; font-weight: 600; }
/* What is typed, and a label's hint in parentheses, in the normal weight (the label's own words are bold). */
label input, label select, label textarea, label .muted { font-weight: 400; }
label.checkbox { display: flex; align-items: center; gap: 0.4rem; font-weight: 400; }
fieldset.events { gap: 0.4rem; }
fieldset.events legend { font-weight: 600; margin-bottom: 0.25rem; }
input { font: inherit; padding: 0.45rem 0.6rem; border: 1px solid #8c959f; border-radius: 6px; }
label.check { display: flex; align-items: center; gap: 0.5rem; font-weight: 400; }
button { font: inherit; padding: 0.45rem 0.9rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.link { background: none; border: none; color: var(--accent); padding: 0; text-decoration: underline; }
.notice { padding: 0.6rem 0.8rem; border-radius: 6px; border: 1px solid var(--fail); color: var(--fail); background: #fff5f5; max-width: 26rem; }
.confirmation { padding: 0.6rem 0.8rem; border-radius: 6px; border: 1px solid var(--pass); color: var(--pass); background: #f3fbf5; max-width: 40rem; }
.actions { display: flex; gap: 0.75rem; flex-wrap: wrap; align-items: center; }
.notice > p:first-child { margin-top: 0; }
.notice > p:last-child { margin-bottom: 0; }
.notice + .actions { margin-top: 1rem; }
button.danger { background: var(--fail); border-color: var(--fail); }
select { font: inherit; padding: 0.45rem 0.6rem; border: 1px solid #8c959f; border-radius: 6px; }
section { margin: 0 0 2rem; }
h2 { font-size: 1.15rem; margin: 0 0 0.75rem; }
.auth-main { margin: 3rem auto; max-width: 28rem; }
/* Project pages: tabs, figures, charts (src/web/charts.tsx), settings. */
nav.tabs ul { display: flex; gap: 1.25rem; list-style: none; margin: 0 0 1.25rem; padding: 0 0 0.4rem; border-bottom: 1px solid var(--line); }
nav.tabs a[aria-current="page"] { font-weight: 600; text-decoration: none; color: var(--fg); }
h2 { font-size: 1.15rem; margin: 1.75rem 0 0.75rem; }
.small { font-size: 0.875rem; }
.description { white-space: pre-line; }
ul.plain { list-style: none; margin: 0; padding: 0; }
dl.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: 0.75rem; margin: 0; }
dl.figures .figure { border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem 0.8rem; }
dl.figures dt { color: var(--muted); font-size: 0.875rem; }
dl.figures dd { margin: 0; }
dl.figures .figure-value { font-size: 1.5rem; font-weight: 600; font-variant-numeric: tabular-nums; }
figure.chart { margin: 0 0 1.5rem; }
figure.chart-empty p { margin: 0; padding: 1rem; border: 1px dashed var(--line); border-radius: 6px; }
/* The cost of flakiness: tests' names and the API path come whole from uploads and ids; they wrap anywhere. */
section.flakiness-cost > p, section.flakiness-cost > ol > li { overflow-wrap: anywhere; }
figure.chart figcaption { font-weight: 600; margin-bottom: 0.25rem; }
figure.chart svg { width: 100%; height: auto; display: block; }
.chart-axis line { stroke: var(--line); }
.chart-axis text { fill: var(--muted); font-size: 11px; }
.chart-hit { fill: transparent; }
.chart-hit:hover { fill: rgba(11, 92, 173, 0.08); }
.tone-pass { fill: var(--pass); stroke: var(--pass); }
.tone-fail { fill: var(--fail); stroke: var(--fail); }
.tone-error { fill: #8250df; stroke: #8250df; }
.tone-accent { fill: var(--accent); stroke: var(--accent); }
.tone-warn { fill: var(--warn); stroke: var(--warn); }
.tone-muted { fill: var(--muted); stroke: var(--muted); }
/* After the tones, and as specific as two classes: a line stays a stroke whatever its tone (a filled path draws a "bow-tie"). */
path.chart-line { fill: none; stroke-width: 2; }
ul.chart-legend { display: flex; gap: 1rem; list-style: none; padding: 0; margin: 0.25rem 0; font-size: 0.875rem; }
.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; border-radius: 2px; margin-right: 0.35rem; vertical-align: -0.1rem; }
span.swatch.tone-pass { background: var(--pass); } span.swatch.tone-fail { background: var(--fail); } span.swatch.tone-error { background: #8250df; }
span.swatch.tone-accent { background: var(--accent); } span.swatch.tone-warn { background: var(--warn); } span.swatch.tone-muted { background: var(--muted); }
details summary { cursor: pointer; color: var(--accent); font-size: 0.875rem; }
textarea { font: inherit; padding: 0.45rem 0.6rem; border: 1px solid #8c959f; border-radius: 6px; }
fieldset { border: none; padding: 0; margin: 0; display: grid; gap: 0.9rem; }
input:disabled, textarea:disabled { background: #f6f8fa; color: var(--fg); }
input.secret { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; width: 100%; max-width: 40rem; }
pre.command { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem 0.8rem; margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-all; }
.command-box { margin: 0.5rem 0 1rem; max-width: 100%; }
.copy { display: inline-flex; align-items: center; gap: 0.5rem; margin: 0.35rem 0; }
.copy-status:empty { display: none; }
input[readonly] { max-width: 100%; box-sizing: border-box; }
.handover { border: 1px solid var(--accent); border-radius: 6px; padding: 0.5rem 0.9rem; margin: 0 0 1rem; }
code.digest { overflow-wrap: anywhere; }
.actions { display: flex; gap: 0.75rem; flex-wrap: wrap; }
button.danger { background: var(--fail); border-color: var(--fail); }
.success { padding: 0.6rem 0.8rem; border-radius: 6px; border: 1px solid var(--pass); background: #f0fff4; }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.75rem; }
h3 { font-size: 1rem; margin: 0 0 0.25rem; overflow-wrap: anywhere; }
.crumbs { margin: 0 0 0.5rem; color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 1.5rem; }
dl.facts dt { font-weight: 600; color: var(--muted); }
dl.facts dd, dl.metadata dd { margin: 0; overflow-wrap: anywhere; }
dl.metadata { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.75rem; margin: 0.25rem 0 0; font-size: 0.875rem; }
dl.metadata dt { color: var(--muted); }
form.filters { display: flex; flex-wrap: wrap; align-items: end; gap: 0.75rem 1rem; margin: 0 0 1rem; }
/* Side by side at their bottoms: a lone button lines up with the button of a form that has a label above its field. */
form.inline { display: inline-flex; align-items: end; gap: 0.5rem; margin: 0 1rem 0.75rem 0; vertical-align: bottom; }
select { font: inherit; padding: 0.4rem 0.5rem; border: 1px solid #8c959f; border-radius: 6px; background: #fff; }
.page-links { display: flex; gap: 1.5rem; margin: 1rem 0; }
.badge { display: inline-block; padding: 0 0.45rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600; border: 1px solid currentColor; margin-right: 0.25rem; }
.status-passed, .health-healthy, .state-active { color: var(--pass); }
.status-failed, .status-errored, .health-broken, .health-failing { color: var(--fail); }
.status-skipped, .state-disabled { color: var(--muted); }
.health-flaky, .quarantined, .state-snoozed { color: var(--warn); }
.failure-group { border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem 1rem; margin: 0 0 1rem; }
ul.failures, ul.events { list-style: none; padding: 0; margin: 0; }
ul.alert-list { list-style: none; padding: 0; margin: 0; }
ul.alert-list li { padding: 0.6rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
ul.alert-list p, ul.events p { margin: 0.2rem 0; }
p.event-sentence { margin: 0.25rem 0; line-height: 1.5; }
details.event-statistics { margin: 0.25rem 0 0; font-size: 0.875rem; }
details.event-statistics dl.facts { margin: 0.5rem 0; }
details.event-raw { margin-top: 0.5rem; }
ul.event-tests { margin: 0.25rem 0; padding-left: 1.25rem; list-style: disc; }
ul.events ul.event-tests li { border: 0; padding: 0.1rem 0; }
ul.failures li, ul.events li { padding: 0.5rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
.failure-message { margin: 0.25rem 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.875rem; white-space: pre-wrap; }
pre { background: #f6f8fa; padding: 0.75rem; overflow-x: auto; font-size: 0.8rem; max-height: 30rem; }
td.nested { padding-left: 2rem; }
ol.history-strip { display: flex; flex-wrap: wrap; gap: 2px; list-style: none; padding: 0; margin: 0; }
ol.history-strip a.cell { display: block; width: 0.7rem; height: 1.6rem; border-radius: 2px; }
ol.history-strip a.cell:focus-visible { outline: 2px solid var(--fg); outline-offset: 1px; }
a.cell.status-passed { background: var(--pass); }
a.cell.status-failed { background: var(--fail); }
a.cell.status-errored { background: #8a1c23; }
a.cell.status-skipped { background: #afb8c1; }
.notice-done { padding: 0.6rem 0.8rem; border-radius: 6px; border: 1px solid var(--pass); color: var(--pass); background: #f0fff4; max-width: 40rem; }
.notice-info { padding: 0.6rem 0.8rem; border-radius: 6px; border: 1px solid var(--warn); background: #fff8e5; max-width: 40rem; }
/* Narrow screens: a wide table scrolls in its own box, never the page (src/web/runs-table.tsx). */
/* Positioned: a visually hidden header (absolutely positioned) stays inside the box, not out where the page would scroll to it. */
.table-scroll { overflow-x: auto; max-width: 100%; margin: 0 0 1rem; position: relative; }
table.projects { min-width: 40rem; }
/* A table's caption stays in view, whole, while its box scrolls (the table may be wider than the screen). */
.table-scroll caption { position: sticky; left: 0; max-width: calc(100vw - 3rem); }
/* A channel's kind is one of three names, never cut letter by letter beside a long URL. */
table.channels td:first-child { overflow-wrap: normal; white-space: nowrap; }
table.channels code { overflow-wrap: anywhere; }
.table-scroll:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
/* A run's failures by verdict (src/web/run-verdicts.tsx) and each branch's latest run. */
.verdict-group { border: 1px solid var(--line); border-left-width: 4px; border-radius: 6px; padding: 0.75rem 1rem; margin: 0 0 1rem; }
.verdict-group.verdict-new { border-left-color: var(--fail); }
.verdict-group.verdict-failing_on_base { border-left-color: var(--muted); }
.verdict-group.verdict-flaky, .verdict-group.verdict-quarantined { border-left-color: var(--warn); }
.verdict-group.verdict-infrastructure { border-left-color: #8250df; }
.verdict-group.fixed { border-left-color: var(--pass); }
.verdict-group h3 .count { font-weight: 400; color: var(--muted); }
.verdict-group > p.small { margin: 0 0 0.5rem; }
ul.verdict-list { list-style: none; padding: 0; margin: 0; }
ul.verdict-list li { padding: 0.5rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
p.reason { margin: 0.15rem 0 0; }
p.more { margin: 0.5rem 0 0; }
ul.verdict-counts { display: flex; flex-wrap: wrap; gap: 0.35rem 0.5rem; list-style: none; padding: 0; margin: 0.5rem 0 1rem; }
.verdict-chip { padding: 0 0.55rem; border-radius: 999px; border: 1px solid currentColor; font-size: 0.875rem; font-weight: 600; white-space: nowrap; }
.verdict-chip a { color: inherit; }
.verdict-chip.verdict-new, .badge.verdict-new { color: var(--fail); }
.verdict-chip.verdict-failing_on_base, .badge.verdict-failing_on_base { color: var(--muted); }
.verdict-chip.verdict-flaky, .verdict-chip.verdict-quarantined, .badge.verdict-flaky, .badge.verdict-quarantined { color: var(--warn); }
.verdict-chip.verdict-infrastructure, .badge.verdict-infrastructure { color: #8250df; }
.verdict-chip.verdict-fixed { color: var(--pass); }
ul.branch-runs { list-style: none; padding: 0; margin: 0 0 0.5rem; }
ul.branch-runs > li { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.25rem 0.75rem; padding: 0.5rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
ul.branch-runs .branch-name { font-weight: 600; min-width: 0; }
ul.branch-runs ul.verdict-counts { margin: 0; }
/* Narrow screens, after the rules they change: facts stack, each term above its value (a state badge with its time is wider than the value's column). */
@media (max-width: 40rem) {
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.facts dd { margin-bottom: 0.5rem; }
  /* A table in its own scrolling box keeps its names' words whole (they wrap between words, not letter by letter): the box scrolls instead. */
  .table-scroll td:first-child { overflow-wrap: break-word; }
}
`;

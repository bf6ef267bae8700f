"""The report.html template (Jinja2, autoescaped), its CSS and its small script, kept as
Python strings. The `|safe` values below are the vendored Vega scripts, PAGE_JS and the
charts' JSON (html._script_json escapes < > & in it); every record string is escaped."""

CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#e3e6ec;--bg:#f4f5f8;--card:#fff;--accent:#1f5fbf;
--high:#c62828;--medium:#b26a00;--low:#6b7385;--ok:#2e7d32}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg);margin:0}
main{max-width:1200px;margin:0 auto;padding:20px 28px 64px}
header h1{font-size:1.6rem;margin:.2rem 0}
header p{margin:.2rem 0;color:var(--muted)}
nav{margin:10px 0 4px;display:flex;flex-wrap:wrap;gap:6px}
nav a{font-size:13px;color:var(--accent);text-decoration:none;border:1px solid var(--line);
background:#fff;border-radius:14px;padding:2px 10px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 20px 18px;margin:16px 0}
h2{font-size:1.2rem;margin:0 0 .5rem}
h3{font-size:1rem;margin:1.1rem 0 .4rem}
p.note,span.note{color:var(--muted);font-size:13px;margin:.3rem 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:12px;margin:14px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .l{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.card .v{font-size:1.6rem;font-weight:650;line-height:1.3}
.card .v.long{font-size:1.15rem;padding:.25rem 0}
.card .s{font-size:12px;color:var(--muted)}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f7f8fa;font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{word-break:break-word;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;background:#f3f4f7;
padding:1px 4px;border-radius:3px;word-break:break-word}
.chart{margin:8px 0;overflow-x:auto}
.chart svg{max-width:100%;height:auto;display:block}
.vl{width:100%;min-height:60px}
th.sortable{cursor:pointer;user-select:none}th.sortable:hover{color:var(--accent)}
th[aria-sort=ascending]::after{content:' ▲';font-size:10px}th[aria-sort=descending]::after{content:' ▼';font-size:10px}
#vg-tooltip-element{font:12px system-ui,sans-serif}
.two{display:grid;grid-template-columns:1fr 1fr;gap:18px}
@media (max-width:900px){.two{grid-template-columns:1fr}}
.finding{border-left:5px solid var(--low);padding:8px 12px;margin:10px 0;background:#fafbfc;border-radius:0 6px 6px 0}
.finding.high{border-color:var(--high)}.finding.medium{border-color:var(--medium)}
.finding h3{margin:0 0 .2rem}
.sev{display:inline-block;font-size:11px;font-weight:700;text-transform:uppercase;color:#fff;border-radius:3px;
padding:0 6px;margin-right:6px;background:var(--low);vertical-align:2px}
.sev.high{background:var(--high)}.sev.medium{background:var(--medium)}
.finding .meta{font-size:12px;color:var(--muted)}
.finding p{margin:.25rem 0}
.yes{color:var(--ok);font-weight:600}.no{color:var(--muted)}.bad{color:var(--high);font-weight:600}
tr.kept td{background:#f1f8f1}
details{margin:8px 0}summary{cursor:pointer;color:var(--accent)}
footer{color:var(--muted);font-size:12px;margin-top:24px}
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="trainprof report">
<title>trainprof report: {{ name }}</title>
<style>{{ css|safe }}</style>
</head>
<body>
<main>
{% macro op_table(rows, kind) %}
<table>
<thead><tr><th>#</th><th>{{ kind }}</th>{% if kind == 'kernel' %}<th>class</th>{% endif %}
<th class="n">calls</th><th class="n">total</th><th class="n">mean</th><th class="n">share</th></tr></thead>
<tbody>
{% for o in rows %}
<tr><td class="n">{{ loop.index }}</td><td class="name" title="{{ o.name }}">{{ o.name|short }}</td>
{% if kind == 'kernel' %}<td>{{ o.kind|known or '' }}{% if o.tensor_core %} (Tensor Cores){% endif %}</td>{% endif %}
<td class="n">{{ '{:,}'.format((o.calls if kind == 'operator' else o.count)|known or 0) }}</td><td class="n">{{ o.total_us|us }}</td>
<td class="n">{{ o.mean_us|us }}</td><td class="n">{{ o.share_pct|pv }}</td></tr>
{% endfor %}
</tbody>
</table>
{% endmacro %}
{% macro profile_section(p, anchor) %}
{% set r = p.rank %}
<section id="{{ anchor }}">
<h2>{{ p.label }}{% if p.n_ranks > 1 %}: rank {{ r.rank }} (of {{ p.n_ranks }} analysed){% endif %}</h2>
<p class="note">{{ r.file }} · {{ r.device_name or ('GPU not named in the trace' if r.has_gpu else 'CPU-only trace') }} · {{ r.steps|known }} profiler steps ·
{{ '{:,}'.format(r.events|known or 0) }} events{% if r.step_time_us %} · median step {{ r.step_time_us|us }}{% endif %}</p>
{% if p.steps_chart %}<h3>Per profiler step</h3><div class="chart vl" id="{{ p.steps_chart }}"></div>{% endif %}
{% if p.temporal_chart or p.idle_chart %}
<div class="two">
{% if p.temporal_chart %}<div><h3>Temporal breakdown</h3><div class="chart vl" id="{{ p.temporal_chart }}"></div>
<p class="note">Share of the device timeline spent computing, communicating, copying, or idle (HTA's definition).</p></div>{% endif %}
{% if p.idle_chart %}<div><h3>Why the device was idle</h3><div class="chart vl" id="{{ p.idle_chart }}"></div>
{% set sc = r.idle_breakdown.sync_calls %}
{% if sc %}<p class="note">Host syncs: {% for c in sc[:4] %}<code>{{ c.name }}</code> ×{{ c.count }}{% if not loop.last %}, {% endif %}{% endfor %}</p>{% endif %}
</div>{% endif %}
</div>
{% elif not r.has_gpu %}
<p class="note">A CPU-only trace has no device timeline: the tables rank operators by self CPU time.</p>
{% endif %}
{% if r.top_ops %}<h3>Top {{ r.top_ops|length }} operators</h3>{{ op_table(r.top_ops, 'operator') }}{% endif %}
{% if r.top_kernels %}<h3>Top {{ r.top_kernels|length }} kernels</h3>{{ op_table(r.top_kernels, 'kernel') }}{% endif %}
{% if p.roofline_chart %}
<h3>Roofline of the top operators</h3>
{% set h = r.roofline %}
<p class="note">Roofs: {% for d, v in (h.peaks_by_dtype or {}).items() %}{{ d }} {{ v|sci }} TFLOP/s{% if not loop.last %}, {% endif %}{% endfor %}{% if h.peak_bandwidth_gbs %}; memory {{ h.peak_bandwidth_gbs|sci }} GB/s; ridge {{ h.ridge_flop_per_byte|sci }} FLOP/B{% endif %} ({{ h.source|known }}). FLOPs and bytes from the recorded shapes (minimum traffic).</p>
{% if r.has_gpu and h.source == 'measured on this machine' %}<p class="note bad">These roofs were measured on the CPU that ran the analysis, not on the trace's GPU (its name is not in the trace): rerun <code>trainprof analyze --gpu-spec KEY</code> (see <code>trainprof specs</code>).</p>{% endif %}
<div class="chart vl" id="{{ p.roofline_chart }}"></div>
<table>
<thead><tr><th>#</th><th>operator</th><th>shapes</th><th class="n">time</th><th class="n">FLOP/B</th>
<th class="n">achieved TFLOP/s</th><th class="n">roof TFLOP/s</th><th class="n">of roof</th><th>bound</th></tr></thead>
<tbody>
{% for q in r.roofline_points %}
<tr><td class="n">{{ loop.index }}</td><td class="name">{{ q.name|short }}</td><td class="name">{{ q.get('input_dims')|dims|short(60) }}</td>
<td class="n">{{ q.device_time_us|us }}</td><td class="n">{{ q.intensity|sci }}</td><td class="n">{{ q.achieved_tflops|sci }}</td>
<td class="n">{{ q.get('attainable_tflops')|sci }}</td><td class="n">{{ q.get('roofline_pct')|pv(0) }}</td><td>{{ q.get('bound') or '?' }}</td></tr>
{% endfor %}
</tbody>
</table>
{% elif r.top_ops %}
<p class="note">No roofline: the trace has no input shapes (profile with <code>record_shapes=True</code>).</p>
{% endif %}
{% set cp = r.critical_path %}
{% if cp and cp.get('steps') %}
<h3>Critical path: what set each step's time</h3>
{% if p.critical_chart %}<div class="chart vl" id="{{ p.critical_chart }}"></div>{% endif %}
<table>
<thead><tr><th>step</th><th class="n">length</th><th>share of the path by kind</th></tr></thead>
<tbody>
{% for s in cp.steps %}
<tr><td class="n">{{ '—' if s.step < 0 else s.step }}</td><td class="n">{{ s.length_us|us }}</td>
<td>{% for k, v in s.share_pct.items() %}{% if loop.index <= 6 %}{{ k }} {{ v|pv }}{% if not loop.last and loop.index < 6 %}, {% endif %}{% endif %}{% endfor %}</td></tr>
{% endfor %}
</tbody>
</table>
{% if cp.trace.top_ops %}<p class="note">On the path over the whole trace: {% for o in cp.trace.top_ops[:5] %}<code>{{ o.name|short(60) }}</code> ({{ o.kind }}) {{ o.share_pct|pv }}{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% endif %}
{% set wi = r.whatif %}
{% if wi and wi.get('scenarios') %}
<h3>What-if: projected step time</h3>
<table>
<thead><tr><th>edit</th><th class="n">measured</th><th class="n">projected</th><th class="n">speed-up</th><th class="n">gain</th></tr></thead>
<tbody>
{% for s in wi.scenarios %}
<tr><td>{{ s.label }}</td><td class="n">{{ s.measured_step_us|us }}</td><td class="n">{{ s.projected_step_us|us }}</td>
<td class="n">{% if s.speedup %}{{ '%.3f'|format(s.speedup) }}×{% else %}—{% endif %}</td><td class="n">{{ s.gain_pct|pv }}</td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">The dependency graph re-timed without each cause (docs/critical-path.md); <code>trainprof whatif TRACE --scale 'PATTERN=F'</code> projects other edits.</p>
{% endif %}
{% if r.notes %}<p class="note">{% for n in r.notes %}{{ n }}{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
</section>
{% endmacro %}
<header>
<h1>trainprof report: {{ name }}</h1>
<p>{% if run %}{{ run.model.get('preset') or run.model.get('class') }} ({{ '{:,}'.format(run.model.get('params') or 0) }} params) on
{{ run.device.name }} [{{ run.device.kind }}] · {% endif %}from {{ files|join(', ') }}</p>
<nav>
{% if run %}<a href="#steps">Step time</a>{% endif %}
{% if system %}<a href="#system">System</a>{% endif %}
{% if profile %}<a href="#profile">Profile</a>{% endif %}
{% if findings or run or profile %}<a href="#findings">Findings</a>{% endif %}
{% if tune %}<a href="#tune">Tuning</a>{% endif %}
{% if optimised %}<a href="#optimised">Optimised profile</a>{% endif %}
{% if diff %}<a href="#diff">Before / after</a>{% endif %}
{% if memory %}<a href="#memory">Memory</a>{% endif %}
{% if ettr %}<a href="#ettr">ETTR</a>{% endif %}
{% if multi or (run and run.get('distributed')) %}<a href="#ranks">Ranks</a>{% endif %}
{% if bench %}<a href="#bench">Benchmark</a>{% endif %}
{% if run %}<a href="#config">Configuration</a>{% endif %}
</nav>
</header>
{% if cards %}
<div class="cards">
{% for c in cards %}<div class="card"><div class="l">{{ c.label }}</div><div class="v{{ ' long' if c.value|length > 10 else '' }}">{{ c.value }}</div><div class="s">{{ c.sub }}</div></div>
{% endfor %}
</div>
{% endif %}
{% if unreadable %}
<section id="unreadable">
<h2>Unreadable traces ({{ unreadable|length }})</h2>
<p class="note bad">These ranks are left out of everything below.</p>
<table><thead><tr><th>trace</th><th>error</th></tr></thead><tbody>
{% for e in unreadable %}<tr><td class="name">{{ e.file }}</td><td>{{ e.error }}</td></tr>{% endfor %}
</tbody></table>
</section>
{% endif %}
{% if run %}
{% set s = run.summary %}
<section id="steps">
<h2>Step time split</h2>
{% if split_chart %}<div class="chart vl" id="{{ split_chart }}"></div>{% endif %}
{% if training_chart %}<h3>Loss and tokens/s over steps</h3><div class="chart vl" id="{{ training_chart }}"></div>{% endif %}
<table>
<thead><tr><th>phase</th>{% for label, key in phases %}<th class="n">{{ label }}</th>{% endfor %}<th class="n">step</th></tr></thead>
<tbody><tr><td>mean of {{ s.measured_steps }} measured steps</td>{% for label, key in phases %}<td class="n">{{ s.get(key)|ms }}</td>{% endfor %}<td class="n">{{ s.step_time_s|ms }}</td></tr>
<tr><td>share of the step</td>{% for label, key in phases %}<td class="n">{{ (s.get(key) / s.step_time_s if s.step_time_s else None)|pct }}</td>{% endfor %}<td class="n">100%</td></tr></tbody>
</table>
<p class="note">Each phase is timed between device syncs; warm-up steps ({{ s.warmup_steps }}) are left out of the means.
Loss {{ s.loss_first|num }} → {{ s.loss_last|num }}{% if s.get('val_loss') is not none %}, validation {{ s.val_loss|num }}{% endif %}.</p>
{% for w in run.get('warnings') or [] %}<p class="note bad">warning: {{ w }}</p>{% endfor %}
</section>
{% endif %}
{% if system %}
{% set ss = system.summary %}
<section id="system">
<h2>System</h2>
{% if system_chart %}<div class="chart vl" id="{{ system_chart }}"></div>{% endif %}
<table>
<tbody>
<tr><td>CPU utilisation (all cores)</td><td>{{ (ss.cpu_util_pct or {}).get('mean')|pv(0) }} mean, {{ (ss.cpu_util_pct or {}).get('max')|pv(0) }} max</td></tr>
<tr><td>process RSS, peak</td><td>{{ ss.rss_bytes_max|gib }}{% if ss.get('children_rss_bytes_max') %} (+ workers {{ ss.children_rss_bytes_max|gib }}){% endif %}</td></tr>
{% for g in ss.get('gpus') or [] %}<tr><td>GPU {{ g.index }}</td><td>utilisation {{ g.get('util_pct_mean')|pv(0) }} mean · SM clock {{ g.get('sm_clock_mhz_mean')|num(0) }} MHz · memory {{ g.get('mem_used_bytes_max')|gib }} · power {{ g.get('power_w_mean')|num(0) }} W mean, {{ g.get('power_w_max')|num(0) }} max · {{ g.get('temp_c_max')|num(0) }} °C max</td></tr>
{% endfor %}
{% for label, text in energy_rows %}<tr><td>{{ label }} energy</td><td>{{ text }}</td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">{{ ss.n_samples }} samples every {{ system.interval_s }} s over {{ ss.duration_s|num(1) }} s (background thread: psutil, RAPL, NVML). GPU utilisation is NVML's: the share of time any kernel ran, not of the SMs busy.</p>
</section>
{% endif %}
{% if profile %}{{ profile_section(profile, 'profile') }}{% endif %}
{% if findings or run or profile %}
<section id="findings">
<h2>Findings{% if bottleneck %}: principal bottleneck <em>{{ bottleneck }}</em>{% endif %}</h2>
{% if findings %}<p class="note">Ranked by severity; the gain is an upper bound on the share of step time the fix recovers.</p>
{% else %}<p class="note">No rule fired: nothing crossed the thresholds of the diagnosis rules (data loading, host syncs, launch overhead, exposed communication, optimizer, memory and more; see docs/rules.md).</p>{% endif %}
{% for f in findings %}
<div class="finding {{ f.get('severity') }}">
<h3><span class="sev {{ f.get('severity') }}">{{ f.get('severity') }}</span>{{ f.get('title') }}</h3>
<p><strong>Evidence:</strong> {{ f.get('evidence') }}</p>
<p><strong>Fix:</strong> {{ f.get('fix') }}</p>
<p class="meta">{{ f.get('id') }} · up to {{ f.get('estimated_gain_pct')|pv }} of step time{% if f.get('projected_gain_pct') is not none %} · projected {{ f.projected_gain_pct|pv }}{% endif %} · {{ f.get('confidence') }} confidence{% if f.get('bottleneck') %} · {{ f.bottleneck }}{% endif %}</p>
</div>
{% endfor %}
</section>
{% endif %}
{% if tune %}
{% set tb = tune.baseline %}{% set best = tune.best %}
<section id="tune">
<h2>Tuning ladder</h2>
{% if ladder_chart %}<div class="chart vl" id="{{ ladder_chart }}"></div>
<p class="note">Each bar is one trial, climbing the ladder with the knobs kept so far; a knob is kept when it is faster than the best so far by the minimum gain and passes the accuracy guard. The headline speed-up below is measured again, best against baseline in alternating pairs, so it can differ from the single trials.</p>{% endif %}
<table>
<thead><tr><th>knob</th><th>what it does</th><th class="n">median step</th><th class="n">× best so far</th><th class="n">× baseline</th><th class="n">MFU</th>
<th class="n">peak mem</th><th>accuracy</th><th>kept</th><th>why not</th></tr></thead>
<tbody>
<tr><td>baseline</td><td>{{ tb.config.get('dtype') }}, {{ tb.config.get('optimizer') }} AdamW, micro-batch {{ tb.config.get('micro_batch') }} × {{ tb.config.get('seq_len') }}</td>
<td class="n">{{ tb.step_time_s|ms }}</td><td class="n"></td><td class="n">1.00</td><td class="n">{{ tb.mfu|pct(0) }}</td><td class="n">{{ tb.peak_memory_bytes|gib }}</td><td>—</td><td></td><td></td></tr>
{% for t in tune.trials %}
<tr class="{{ 'kept' if t.accepted else '' }}"><td>{{ t.knob }}</td><td>{{ t.description or '' }}{% if t.cost %}<br><span class="note">cost: {{ t.cost }}</span>{% endif %}</td>
{% if t.skipped %}<td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td>—</td><td class="no">skipped</td>
{% else %}<td class="n">{{ t.step_time_s|ms }}</td><td class="n">{{ '%.2f'|format(t.step_gain) if t.step_gain else '—' }}</td><td class="n">{{ '%.2f'|format(t.speedup) if t.speedup else '—' }}</td>
<td class="n">{{ t.mfu|pct(0) }}</td><td class="n">{{ t.peak_memory_bytes|gib }}</td>
<td>{% if t.ok %}{% if t.accuracy_ok %}<span class="yes">ok</span>{% else %}<span class="bad">failed</span>{% endif %}{% if t.loss_deviation is number %}<br><span class="note">|Δloss| {{ '%.3f'|format(t.loss_deviation) }}{% if t.val_delta is number %}, Δval {{ '%+.3f'|format(t.val_delta) }}{% endif %}</span>{% endif %}{% else %}—{% endif %}</td>
<td>{% if t.accepted %}<span class="yes">yes</span>{% else %}<span class="no">no</span>{% endif %}</td>{% endif %}
<td>{{ t.reason or '' }}</td></tr>
{% endfor %}
</tbody>
</table>
{% set v = best.verify %}
{% if best.unconfirmed %}
<p><strong>Best: the baseline</strong>: {{ best.unconfirmed.reason }} ({{ '%.2f'|format(v.speedup_min) }}–{{ '%.2f'|format(v.speedup_max) }}×), so {{ best.unconfirmed.knobs|join(', ') }} not kept.</p>
{% elif v and v.speedup_median %}
<p><strong>Best: {{ '%.2f'|format(v.speedup_median) }}× the baseline's tokens/s</strong> with {{ best.knobs|join(', ') or 'no knob' }}
(median of {{ v.pairs|length }} alternating best/baseline pairs, {{ '%.2f'|format(v.speedup_min) }}–{{ '%.2f'|format(v.speedup_max) }}×).</p>
{% else %}<p><strong>Best: the baseline</strong>: no knob was both faster and accurate.</p>{% endif %}
<p>Reproduce: <code>{{ best.command }}</code></p>
{% set tol = tune.tolerance %}
{% if tol %}<p class="note">Accuracy guard: loss trajectory within {{ tol.trajectory_tol|num }} and validation loss within {{ tol.val_tol|num }} of the baseline (calibrated on seed-to-seed noise).</p>{% endif %}
</section>
{% endif %}
{% if optimised %}{{ profile_section(optimised, 'optimised') }}{% endif %}
{% if diff %}
{% set st = diff.step_time_us %}
<section id="diff">
<h2>Before / after (trainprof diff)</h2>
<p>Step time {{ st.base|us }} → {{ st.new|us }}{% if st.speedup %}: <strong>{{ '%.2f'|format(st.speedup) }}× faster</strong>{% endif %}
{% if diff.base and diff.new %}<span class="note">({{ diff.base.file }} → {{ diff.new.file }})</span>{% endif %}</p>
<table><thead><tr><th>operator</th><th class="n">before / step</th><th class="n">after / step</th><th class="n">change</th><th>status</th></tr></thead>
<tbody>{% for o in diff.ops.top %}<tr><td class="name">{{ o.name|short }}</td><td class="n">{{ o.base_us_per_step|us }}</td><td class="n">{{ o.new_us_per_step|us }}</td>
<td class="n">{{ o.change_pct|pv }}</td><td>{{ o.status }}</td></tr>{% endfor %}</tbody></table>
</section>
{% endif %}
{% if memory %}
<section id="memory">
<h2>Memory</h2>
{% if memory_chart %}<div class="chart vl" id="{{ memory_chart }}"></div>
<p class="note">The analytic peak adds optimizer-step temporaries and the backward working set to the main terms. Measured above baseline: the peak minus what the process held before the model existed (interpreter, libraries).</p>{% endif %}
<table><thead><tr><th>term</th><th class="n">size</th></tr></thead><tbody>
{% for key, label in [('params_bytes', 'weights'), ('grads_bytes', 'gradients'), ('optimizer_bytes', 'optimizer states'),
  ('activations_bytes', 'activations'), ('logits_bytes', 'logits'), ('analytic_peak_bytes', 'peak (analytic)'),
  ('measured_above_baseline_bytes', 'measured peak above baseline'), ('measured_peak_bytes', 'measured peak (raw)')] %}
{% if memory[key] is not none %}<tr><td>{{ label }}</td><td class="n">{{ memory[key]|gib }}</td></tr>{% endif %}
{% endfor %}
</tbody></table>
{% if memory.max_micro_batch %}<p>Largest micro-batch that fits: <strong>{{ memory.max_micro_batch }}</strong>{% if memory.device.memory_limit_bytes %} (limit {{ memory.device.memory_limit_bytes|gib }}){% endif %}.</p>{% endif %}
{% if memory.ladder %}
<h3>Memory ladder</h3>
<table><thead><tr><th>step</th><th>change</th><th>status</th><th class="n">measured</th><th class="n">analytic</th><th class="n">step time</th></tr></thead><tbody>
{% for l in memory.ladder %}<tr><td>{{ l.step }}</td><td>{{ l.change }}</td><td>{{ l.status }}</td>
<td class="n">{{ (l.measured_above_baseline_bytes if l.measured_above_baseline_bytes is not none else l.measured_peak_bytes)|gib }}</td><td class="n">{{ l.analytic_peak_bytes|gib }}</td><td class="n">{{ l.step_time_s|ms }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
</section>
{% endif %}
{% if ettr %}
<section id="ettr">
<h2>Effective training time ratio</h2>
<p>ETTR <strong>{{ ettr.ettr|pct }}</strong>: {{ ettr.productive_s|num(1) }} s of productive steps in {{ ettr.wall_s|num(1) }} s of wall time
{% if ettr.sessions %}(sessions: {{ ettr.sessions }}, failures: {{ ettr.failures }}){% endif %}.</p>
{% if ettr.lost_s %}<table><thead><tr><th>lost to</th><th class="n">seconds</th><th class="n">share of wall time</th></tr></thead><tbody>
{% for k, v in ettr.lost_s.items() %}<tr><td>{{ k|replace('_', ' ') }}</td><td class="n">{{ v|num(2) }}</td><td class="n">{{ (v / ettr.wall_s if ettr.wall_s else None)|pct }}</td></tr>{% endfor %}</tbody></table>{% endif %}
</section>
{% endif %}
{% if multi or (run and run.get('distributed')) %}
<section id="ranks">
<h2>Ranks</h2>
{% if multi %}
<p>{{ multi.ranks }} ranks analysed; step time {{ multi.step_time_us.min|us }} – {{ multi.step_time_us.max|us }} (median {{ multi.step_time_us.median|us }}).</p>
{% if ranks_chart %}<div class="chart vl" id="{{ ranks_chart }}"></div>{% endif %}
{% set slow = multi.stragglers %}
<table><thead><tr><th>rank</th><th class="n">step</th><th class="n">compute</th><th class="n">communication</th><th class="n">idle</th><th class="n">waiting for others</th><th></th></tr></thead><tbody>
{% for p in multi.per_rank %}<tr><td>{{ p.rank }}</td><td class="n">{{ p.step_time_us|us }}</td><td class="n">{{ p.compute_us|us }}</td><td class="n">{{ p.communication_us|us }}</td>
<td class="n">{{ p.idle_us|us }}</td><td class="n">{{ p.wait_us|us }}</td><td>{% for x in slow if x.rank == p.rank %}<span class="bad">straggler (+{{ '%.1f'|format(x.compute_excess_pct) }}% compute)</span>{% endfor %}</td></tr>{% endfor %}
</tbody></table>
{% set cj = multi.collectives %}
{% if cj %}
<h3>Collectives across ranks</h3>
<p>{{ cj.matched }} collectives matched by (process group, op, order){% if not cj.consistent %}; unmatched per rank: {{ cj.unmatched }}{% endif %}{% if cj.world_size > cj.ranks %}; {{ cj.ranks }} of {{ cj.world_size }} ranks, so waits and skews are among these only{% endif %}. Clocks aligned on collective ends; busbw with nccl-tests' factors.</p>
<table><thead><tr><th>group</th><th>op</th><th class="n">count</th><th class="n">bytes</th><th class="n">latency p50</th><th class="n">skew p50</th><th class="n">skew max</th><th class="n">busbw p50 (GB/s)</th><th class="n">overlap with compute p50</th></tr></thead><tbody>
{% for g in cj.groups %}<tr><td>{{ g.group }}</td><td>{{ g.op }}</td><td class="n">{{ g.count }}</td><td class="n">{{ '{:,}'.format(g.bytes) if g.bytes else '—' }}</td><td class="n">{{ g.median_latency_us|us }}</td><td class="n">{{ g.median_skew_us|us }}</td><td class="n">{{ g.max_skew_us|us }}</td><td class="n">{{ g.median_busbw_gbs|num(3) }}</td><td class="n">{{ '—' if g.median_compute_overlap_pct|known is none else '%.0f%%'|format(g.median_compute_overlap_pct) }}</td></tr>{% endfor %}
</tbody></table>
<table><thead><tr><th>rank</th><th class="n">waited</th><th class="n">others waited for it</th><th class="n">share of waits</th><th class="n">last to arrive</th><th class="n">clock offset</th></tr></thead><tbody>
{% for r in cj.per_rank %}<tr><td>{{ r.rank }}</td><td class="n">{{ r.wait_us|us }}</td><td class="n">{{ r.caused_wait_us|us }}</td><td class="n">{{ '%.0f'|format(r.caused_share_pct) }}%</td><td class="n">{{ r.last_count }}</td><td class="n">{{ r.clock_offset_us|us }}</td></tr>{% endfor %}
</tbody></table>
{% if cj.lateness %}<p class="note">Host lateness entering steps {{ cj.lateness.steps[0] }}–{{ cj.lateness.steps[-1] }} (median / max): {% for r in cj.lateness.per_rank %}rank {{ r.rank }} {{ r.median_late_us|us }} / {{ r.max_late_us|us }}{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% else %}
<p class="note">Per step. A straggler computes more than the median rank by over {{ multi.threshold_pct|known }}%, and the others wait for it in collectives.</p>
{% endif %}
{% endif %}
{% if run and run.get('distributed') %}{% set d = run.distributed %}
<p>Training job: {{ d.world_size }} × {{ d.strategy }} ({{ d.backend }}), {{ '{:,.0f}'.format(d.job_tokens_per_s) }} tokens/s; slowest rank {{ d.straggler_rank }} (+{{ '%.1f'|format(d.straggler_excess_pct) }}% vs median).</p>
<table><thead><tr><th>rank</th><th class="n">step</th><th class="n">forward</th><th class="n">backward</th><th class="n">optimizer</th><th class="n">data</th></tr></thead><tbody>
{% for p in d.get('per_rank') or [] %}<tr><td>{{ p.rank }}</td><td class="n">{{ p.step_time_s|ms }}</td><td class="n">{{ p.get('forward_s')|ms }}</td><td class="n">{{ p.get('backward_s')|ms }}</td><td class="n">{{ p.get('optimizer_s')|ms }}</td><td class="n">{{ p.get('data_s')|ms }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
</section>
{% endif %}
{% if bench %}
{% set e = bench.env %}
<section id="bench">
<h2>Benchmark: {{ bench.kind }}</h2>
<p class="note">{{ e.device }} [{{ e.device_kind }}], torch {{ e.torch }}, {{ e.threads }} threads, {{ e.date }}, benchmark v{{ e.benchmark_version }}{% if e.others_cpu_share %}; other processes used {{ e.others_cpu_share|pct(0) }} of the CPU meanwhile, so CPU numbers understate the hardware{% endif %}</p>
<table><thead><tr>{% for c in bench_cols %}<th{% if c not in ('dtype', 'op', 'shape', 'test', 'memory', 'kind') %} class="n"{% endif %}>{{ c[:-2] if c.endswith('_s') else c }}</th>{% endfor %}</tr></thead><tbody>
{% for row in bench.results %}<tr>{% for c in bench_cols %}{% set v = row.get(c) %}<td{% if v is number %} class="n"{% endif %}>{{ bench_cell(c, v) }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
</section>
{% endif %}
{% if run %}
<section id="config">
<h2>Configuration</h2>
<details><summary>workload, device and FLOP convention</summary>
<table><tbody>
{% for k, v in run.config.items() %}<tr><td>{{ k }}</td><td><code>{{ v }}</code></td></tr>{% endfor %}
{% for k, v in run.device.items() %}<tr><td>device.{{ k }}</td><td><code>{{ v }}</code></td></tr>{% endfor %}
{% for k, v in (run.get('flops') or {}).items() if v is not mapping %}<tr><td>flops.{{ k }}</td><td><code>{{ v }}</code></td></tr>{% endfor %}
{% for k, v in (run.get('environment') or {}).items() %}<tr><td>environment.{{ k }}</td><td><code>{{ v }}</code></td></tr>{% endfor %}
</tbody></table>
</details>
</section>
{% endif %}
<footer>Written by <code>trainprof report</code>: one self-contained file that opens offline (charts drawn by the inlined Vega, Vega-Lite and vega-embed, BSD-3-Clause; hover for values, drag the strip under a timeline to zoom; click a table heading to sort).</footer>
{% if charts_json %}<script type="application/json" id="trainprof-charts">{{ charts_json|safe }}</script>
<script>{{ vendor_js|safe }}</script>{% endif %}
<script>{{ page_js|safe }}</script>
</main>
</body>
</html>
"""


# Draws the charts (vega-embed, SVG renderer: text stays text) and makes tables sortable.
# window.trainprofCharts tells a test (or a curious user) what rendered and what failed.
PAGE_JS = r"""
(function () {
  "use strict";
  var state = window.trainprofCharts = {total: 0, done: 0, failed: [], views: {}};
  var block = document.getElementById("trainprof-charts");
  if (block && window.vegaEmbed) {
    var specs = JSON.parse(block.textContent);
    Object.keys(specs).forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) return;
      state.total++;
      vegaEmbed(el, specs[id], {actions: false, renderer: "svg"}).then(function (result) {
        el.setAttribute("data-rendered", "1"); state.views[id] = result.view; state.done++;
      }).catch(function (e) {
        el.setAttribute("data-error", String(e)); state.failed.push(id);
        console.error("trainprof: chart " + id + " failed: " + e);
      });
    });
  }
  // Sort on the value a cell shows: "1.2 ms" < "340.0 ms" < "1.05 s", "2.00 GiB" > "900 MiB".
  var UNIT = {"ns": 1e-9, "\u00b5s": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1, "B": 1, "KiB": 1024,
              "MiB": 1048576, "GiB": 1073741824, "TiB": 1099511627776};
  function value(cell) {
    var t = (cell.getAttribute("data-v") || cell.textContent).trim().replace(/,/g, "");
    var m = t.match(/^([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*(ns|\u00b5s|us|ms|s|B|KiB|MiB|GiB|TiB)?(?![A-Za-z])/);
    if (!m) return null;
    return parseFloat(m[1]) * (m[2] ? UNIT[m[2]] : 1);
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;  // first click: largest first
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col];
      if (!x || !y) return 0;
      var u = value(x), v = value(y);
      if (u !== null && v !== null) return dir * (u - v);
      if (u !== null) return -1;
      if (v !== null) return 1;
      return dir * x.textContent.localeCompare(y.textContent);
    });
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table"), function (table) {
    if (!table.tHead || !table.tBodies.length || table.tBodies[0].rows.length < 2) return;
    var head = table.tHead.rows[table.tHead.rows.length - 1];
    Array.prototype.forEach.call(head.cells, function (th, col) {
      th.classList.add("sortable");
      th.title = "click to sort";
      th.addEventListener("click", function () { sortBy(table, col, th); });
    });
  });
})();
"""

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
.sev.high{background:var(--high)}.sev.medium{background:var(--medium)}.sev.info{background:#9aa3b5}
.finding.info{border-color:#d5d9e2;opacity:.85}
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
{% macro op_table(rows, kind, names, at) %}
<table>
<thead><tr><th>#</th><th>{{ kind }}</th>{% if kind == 'kernel' %}<th>class</th>{% endif %}
<th class="n">calls</th><th class="n">total</th><th class="n">mean</th><th class="n">share</th></tr></thead>
<tbody>
{% for o in rows %}{% set f = at ~ '[' ~ loop.index0 ~ ']' %}{% set n = 'calls' if kind == 'operator' else 'count' %}
<tr><td class="n">{{ loop.index }}</td><td class="name" title="{{ o.name }}">{{ names[loop.index0] }}</td>
{% if kind == 'kernel' %}<td>{{ o.kind|known or '' }}{% if o.tensor_core %} (Tensor Cores){% endif %}</td>{% endif %}
<td class="n">{{ fig(o[n], 'int', f ~ '.' ~ n) }}</td><td class="n">{{ fig(o.total_us, 'us', f ~ '.total_us') }}</td>
<td class="n">{{ fig(o.mean_us, 'us', f ~ '.mean_us') }}</td><td class="n">{{ fig(o.share_pct, 'pct', f ~ '.share_pct') }}</td></tr>
{% endfor %}
</tbody>
</table>
{% endmacro %}
{% macro profile_section(p, anchor) %}
{% set r = p.rank %}{% set at = p.at %}
<section id="{{ anchor }}">
<h2>{{ p.label }}{% if p.n_ranks > 1 %}: rank {{ r.rank }} (of {{ p.n_ranks }} analysed){% endif %}</h2>
<p class="note">{{ r.file }} · {{ p.device }} · {{ p.steps_text }} ·
{{ fig(r.events, 'int', at ~ '.events') }} events{% if p.has_steps and r.step_time_us %} · median step {{ fig(r.step_time_us, 'us', at ~ '.step_time_us') }}{% endif %}</p>
{% if p.steps_chart %}<h3>Per step</h3><div class="chart vl" id="{{ p.steps_chart }}"></div>{% endif %}
{% if p.temporal_chart or p.idle_chart %}
<div class="two">
{% if p.temporal_chart %}{% set tb = r.temporal_breakdown %}<div><h3>Temporal breakdown: {{ labels.temporal }}</h3><div class="chart vl" id="{{ p.temporal_chart }}"></div>
<p class="note">Share of the device timeline (span {{ fig(tb.span_us, 'us', at ~ '.temporal_breakdown.span_us') }}) spent computing, communicating, copying, or idle (HTA's definition). {{ labels['temporal_note' if p.has_steps else 'temporal_note.no_steps'] }}.</p></div>{% endif %}
{% if p.idle_chart %}{% set ib = r.idle_breakdown %}<div><h3>{{ labels.idle }}</h3><div class="chart vl" id="{{ p.idle_chart }}"></div>
<p class="note">{{ fig(ib.idle_us, 'us', at ~ '.idle_breakdown.idle_us') }} idle in {{ fig(ib.gaps, 'int', at ~ '.idle_breakdown.gaps') }} gaps over a {{ fig(ib.span_us, 'us', at ~ '.idle_breakdown.span_us') }} span; the axis runs to the total idle time.</p>
{% set sc = ib.sync_calls %}
{% if sc %}<p class="note">Host syncs: {% for c in sc[:4] %}<code>{{ c.name }}</code> ×{{ fig(c.count, 'int', at ~ '.idle_breakdown.sync_calls[' ~ loop.index0 ~ '].count') }}{% if not loop.last %}, {% endif %}{% endfor %}</p>{% endif %}
{% set cm = r.communication %}
{% if cm and cm.kernels %}<p class="note">{{ labels.communication }}: {{ labels['communication.union'] }} {{ fig(cm.union_us, 'us', at ~ '.communication.union_us') }}, {{ fig(cm.overlap_pct, 'pct', at ~ '.communication.overlap_pct') }} {{ labels['communication.overlap'] }}, {{ fig(cm.exposed_us, 'us', at ~ '.communication.exposed_us') }} {{ labels['communication.exposed'] }}.</p>{% endif %}
</div>{% endif %}
</div>
{% elif not r.has_gpu %}
<p class="note">A CPU-only trace has no device timeline: the tables rank operators by self CPU time.</p>
{% endif %}
{% if r.top_ops %}<h3>Top {{ r.top_ops|length }} operators</h3>{{ op_table(r.top_ops, 'operator', p.op_names, at ~ '.top_ops') }}{% endif %}
{% if r.top_kernels %}<h3>Top {{ r.top_kernels|length }} kernels</h3>{{ op_table(r.top_kernels, 'kernel', p.kernel_names, at ~ '.top_kernels') }}{% endif %}
{% if p.roofline_chart or p.roof_rows %}
<h3>Roofline of the top {{ p.roof_rows|length ~ ' ' if p.roof_rows else '' }}operators</h3>
{% set h = r.roofline %}{% set hf = at ~ '.roofline' %}
<p class="note">Roofs: {% for d, v in (h.peaks_by_dtype or {}).items() %}{{ d }} {{ fig(v, 'g3', hf ~ '.peaks_by_dtype' ~ key(d)) }} TFLOP/s{% if not loop.last %}, {% endif %}{% endfor %}{% if h.peak_bandwidth_gbs %}; memory {{ fig(h.peak_bandwidth_gbs, 'g3', hf ~ '.peak_bandwidth_gbs') }} GB/s; ridge {{ fig(h.ridge_flop_per_byte, 'g3', hf ~ '.ridge_flop_per_byte') }} FLOP/B{% endif %} ({{ h.source|known }}). FLOPs and bytes from the recorded shapes (minimum traffic).</p>
{% if h.hint %}<p class="note{{ '' if h.ridge_flop_per_byte else ' bad' }}">{{ h.hint }}</p>{% endif %}
{% if r.has_gpu and (h.source or '').startswith('measured on this machine') %}<p class="note bad">These roofs were measured on the CPU that ran the analysis, not on the trace's GPU (its name is not in the trace): rerun <code>trainprof analyze --gpu-spec KEY</code> (see <code>trainprof specs</code>).</p>{% endif %}
{% if p.roofline_chart %}<div class="chart vl" id="{{ p.roofline_chart }}"></div>{% endif %}
{% if p.roof_rows %}
<table>
<thead><tr><th>#</th><th>operator</th><th class="n">time</th><th class="n">FLOPs</th><th class="n">bytes</th><th class="n">FLOP/B</th>
<th class="n">achieved TFLOP/s</th><th class="n">attainable TFLOP/s</th><th class="n">of roof</th><th>bound</th></tr></thead>
<tbody>
{% for o, q in p.roof_rows %}{% set f = at ~ '.top_ops[' ~ loop.index0 ~ ']' %}{% set g = f ~ '.roofline' %}
<tr><td class="n">{{ loop.index }}</td><td class="name" title="{{ o.name }}">{{ p.op_names[loop.index0] }}</td><td class="n">{{ fig(o.total_us, 'us', f ~ '.total_us') }}</td>
{% if q %}<td class="n">{{ fig(q.flops, 'g3', g ~ '.flops') }}</td><td class="n">{{ fig(q.bytes, 'g3', g ~ '.bytes') }}</td><td class="n">{{ fig(q.intensity, 'g3', g ~ '.intensity') }}</td>
<td class="n">{{ fig(q.achieved_tflops, 'g3', g ~ '.achieved_tflops') }}</td><td class="n">{{ fig(q.attainable_tflops, 'g3', g ~ '.attainable_tflops') }}</td>
<td class="n">{{ fig(q.roofline_pct, 'pct0', g ~ '.roofline_pct') }}</td><td>{{ q.bound or '—' }}{% if q.note %}<br><span class="note">{{ q.note }}</span>{% endif %}</td></tr>
{% else %}<td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td>—</td></tr>{% endif %}
{% endfor %}
</tbody>
</table>
<p>{{ p.roof_bounds }}</p>
{% else %}
<table>
<thead><tr><th>#</th><th>operator</th><th>shapes</th><th class="n">time</th><th class="n">FLOP/B</th>
<th class="n">achieved TFLOP/s</th><th class="n">roof TFLOP/s</th><th class="n">of roof</th><th>bound</th></tr></thead>
<tbody>
{% for q in r.roofline_points %}{% set f = at ~ '.roofline_points[' ~ loop.index0 ~ ']' %}
<tr><td class="n">{{ loop.index }}</td><td class="name" title="{{ q.name }}">{{ p.point_names[loop.index0] }}</td><td class="name">{{ q.input_dims|dims|short(60) }}</td>
<td class="n">{{ fig(q.device_time_us, 'us', f ~ '.device_time_us') }}</td><td class="n">{{ fig(q.intensity, 'g3', f ~ '.intensity') }}</td><td class="n">{{ fig(q.achieved_tflops, 'g3', f ~ '.achieved_tflops') }}</td>
<td class="n">{{ fig(q.attainable_tflops, 'g3', f ~ '.attainable_tflops') }}</td><td class="n">{{ fig(q.roofline_pct, 'pct0', f ~ '.roofline_pct') }}</td><td>{{ q.bound or '?' }}</td></tr>
{% endfor %}
</tbody>
</table>
{% endif %}
{% elif r.top_ops %}
<p class="note">No roofline: the trace has no input shapes (profile with <code>record_shapes=True</code>).</p>
{% endif %}
{% set cp = r.critical_path %}
{% if cp and cp.steps %}
<h3>{% if p.has_steps %}Critical path: what set each step's time{% else %}Critical path of the whole trace (no steps){% endif %}</h3>
{% if p.critical_chart %}<div class="chart vl" id="{{ p.critical_chart }}"></div>{% endif %}
<table>
<thead><tr><th>{{ 'step' if p.has_steps else 'trace' }}</th><th class="n">length</th><th>share of the path by kind</th></tr></thead>
<tbody>
{% for s in cp.steps %}{% set f = at ~ '.critical_path.steps[' ~ loop.index0 ~ ']' %}
<tr><td class="n">{{ '—' if s.step < 0 else s.step }}</td><td class="n">{{ fig(s.length_us, 'us', f ~ '.length_us') }}</td>
<td>{% for k, v in s.share_pct.items() %}{% if loop.index <= 6 %}{{ k }} {{ fig(v, 'pct', f ~ '.share_pct' ~ key(k)) }}{% if not loop.last and loop.index < 6 %}, {% endif %}{% endif %}{% endfor %}</td></tr>
{% endfor %}
</tbody>
</table>
{% if cp.trace.top_ops %}<p class="note">On the path over the whole trace: {% for o in cp.trace.top_ops[:5] %}<code title="{{ o.name }}">{{ p.path_names[loop.index0] }}</code> ({{ o.kind }}) {{ fig(o.share_pct, 'pct', at ~ '.critical_path.trace.top_ops[' ~ loop.index0 ~ '].share_pct') }}{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% endif %}
{% set wi = r.whatif %}
{% if wi and wi.scenarios %}
<h3>What-if: projected {% if p.has_steps %}step time{% else %}length of the whole trace (no steps){% endif %}</h3>
<table>
<thead><tr><th>edit</th><th class="n">measured</th><th class="n">projected</th><th class="n">speed-up</th><th class="n">gain</th></tr></thead>
<tbody>
{% for s in wi.scenarios %}{% set f = at ~ '.whatif.scenarios[' ~ loop.index0 ~ ']' %}
<tr><td>{{ s.label }}</td><td class="n">{{ fig(s.measured_step_us, 'us', f ~ '.measured_step_us') }}</td><td class="n">{{ fig(s.projected_step_us, 'us', f ~ '.projected_step_us') }}</td>
<td class="n">{{ fig(s.speedup or none, 'x3', f ~ '.speedup') }}</td><td class="n">{{ fig(s.gain_pct, 'pct', f ~ '.gain_pct') }}</td></tr>
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
{% if study %}<a href="#study">Study</a>{% endif %}
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
{% set split = s.get('phase_split') or {} %}{% set sf = 'run.summary.phase_split' %}
<tbody><tr><td>mean of {{ s.measured_steps }} measured steps</td>{% for label, k in phases %}<td class="n">{{ fig((split.get(k) or {}).get('mean_s'), 's', sf ~ '.' ~ k ~ '.mean_s') }}</td>{% endfor %}<td class="n">{{ fig(s.step_time_s, 's', 'run.summary.step_time_s') }}</td></tr>
<tr><td>share of the mean step</td>{% for label, k in phases %}<td class="n">{{ fig((split.get(k) or {}).get('mean_share_pct'), 'pct', sf ~ '.' ~ k ~ '.mean_share_pct') }}</td>{% endfor %}<td class="n">100%</td></tr>
{% if split.values()|selectattr('outlier_driven')|list %}<tr><td>median, where a few slow steps drive the mean</td>{% for label, k in phases %}{% set q = split.get(k) or {} %}<td class="n">{% if q.get('outlier_driven') %}{{ fig(q.median_s, 's', sf ~ '.' ~ k ~ '.median_s') }} ({{ fig(q.median_share_pct, 'pct', sf ~ '.' ~ k ~ '.median_share_pct') }}){% endif %}</td>{% endfor %}<td class="n">{{ fig(s.step_time_median_s, 's', 'run.summary.step_time_median_s') }}</td></tr>{% endif %}</tbody>
</table>
<p class="note">Each phase is timed between device syncs; warm-up steps ({{ s.warmup_steps }}) are left out of the means.
Loss {{ fig(s.loss_first, 'num3', 'run.summary.loss_first') }} → {{ fig(s.loss_last, 'num3', 'run.summary.loss_last') }}{% if s.get('val_loss') is not none %}, validation {{ fig(s.val_loss, 'num3', 'run.summary.val_loss') }}{% endif %}.</p>
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
{% if findings %}<p class="note">Ranked by severity; the gain is an upper bound on the share of {{ gain_of }} the fix recovers; <em>info</em>: under 0.5% (projected where the what-if has it), a note rather than a claim.</p>
{% else %}<p class="note">No rule fired: nothing crossed the thresholds of the diagnosis rules (data loading, host syncs, launch overhead, exposed communication, optimizer, memory and more; see docs/rules.md).</p>{% endif %}
{% for f in findings %}
<div class="finding {{ f.get('severity') }}">
<h3><span class="sev {{ f.get('severity') }}">{{ f.get('severity') }}</span>{{ f.get('title') }}</h3>
<p><strong>Evidence:</strong> {{ f.get('evidence') }}</p>
<p><strong>Fix:</strong> {{ f.get('fix') }}</p>
<p class="meta">{{ f.get('id') }} · {% if f.get('estimated_gain_pct') %}up to {{ fig(f.estimated_gain_pct, 'pct', f._field ~ '.estimated_gain_pct') }} of {{ gain_of }}{% if f.get('projected_gain_pct') is not none %}, projected {{ fig(f.projected_gain_pct, 'pct', f._field ~ '.projected_gain_pct') }}{% endif %}{% else %}a caveat: no speed-up claimed{% endif %} · {{ f.get('confidence') }} confidence{% if f.get('bottleneck') %} · {{ f.bottleneck }}{% endif %}</p>
</div>
{% endfor %}
</section>
{% endif %}
{% if tune %}
{% set tb = tune.baseline %}{% set best = tune.best %}
<section id="tune">
<h2>Tuning ladder</h2>
{% if ladder_chart %}<div class="chart vl" id="{{ ladder_chart }}"></div>
<p class="note">Each bar is one trial, climbing the ladder with the knobs that passed so far; a knob passes its trial when it is faster than the best so far by the minimum gain and passes the accuracy guard. Kept means in the final configuration: passed, and confirmed by the alternating best/baseline pairs, so the headline speed-up below can differ from the single trials.</p>{% endif %}
<table>
<thead><tr><th>knob</th><th>what it does</th><th class="n">median step</th><th class="n">× best so far</th><th class="n">× baseline</th><th class="n">MFU</th>
<th class="n">peak mem</th><th>accuracy</th><th>trial</th><th>kept</th><th>why not</th></tr></thead>
<tbody>
<tr><td>baseline</td><td>{{ tb.config.get('dtype') }}, {{ tb.config.get('optimizer') }} AdamW, micro-batch {{ tb.config.get('micro_batch') }} × {{ tb.config.get('seq_len') }}</td>
<td class="n">{{ fig(tb.step_time_s, 's', 'tune.baseline.step_time_s') }}</td><td class="n"></td><td class="n">1.00</td><td class="n">{{ fig(tb.mfu, 'frac0', 'tune.baseline.mfu') }}</td><td class="n">{{ fig(tb.peak_memory_bytes, 'bytes', 'tune.baseline.peak_memory_bytes') }}</td><td>—</td><td></td><td></td><td></td></tr>
{% for t in tune.trials %}{% set f = 'tune.trials[' ~ loop.index0 ~ ']' %}
{% set kept = t.knob in best.knobs %}
<tr class="{{ 'kept' if kept else '' }}"><td>{{ t.knob }}</td><td>{{ t.description or '' }}{% if t.cost %}<br><span class="note">cost: {{ t.cost }}</span>{% endif %}</td>
{% if t.skipped %}<td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td class="n">—</td><td>—</td><td class="no">skipped</td><td class="no">no</td>
{% else %}<td class="n">{{ fig(t.step_time_s, 's', f ~ '.step_time_s') }}</td><td class="n">{{ fig(t.step_gain or none, 'num2', f ~ '.step_gain') }}</td><td class="n">{{ fig(t.speedup or none, 'num2', f ~ '.speedup') }}</td>
<td class="n">{{ fig(t.mfu, 'frac0', f ~ '.mfu') }}</td><td class="n">{{ fig(t.peak_memory_bytes, 'bytes', f ~ '.peak_memory_bytes') }}</td>
<td>{% if t.ok %}{% if t.accuracy_ok %}<span class="yes">ok</span>{% else %}<span class="bad">failed</span>{% endif %}{% if t.loss_deviation is number %}<br><span class="note">|Δloss| {{ '%.3f'|format(t.loss_deviation) }}{% if t.val_delta is number %}, Δval {{ '%+.3f'|format(t.val_delta) }}{% endif %}</span>{% endif %}{% else %}—{% endif %}</td>
<td>{% if t.accepted %}passed{% else %}<span class="no">no</span>{% endif %}</td>
<td>{% if kept %}<span class="yes">yes</span>{% else %}<span class="no">no</span>{% endif %}</td>{% endif %}
<td>{{ t.reason or ('not confirmed by the verify pairs' if t.accepted and not kept else '') }}</td></tr>
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
{% if study %}
<section id="study">
<h2>Study: budget, accuracy and speed-up</h2>
{% set sf = study_spent %}
<p>Budget {{ fig(study.budget_s, 'dur', 'study.budget_s') }}, spent {{ fig(study[sf[6:]], 'dur', sf) }} before the report.{% if study.budget_note %} <span class="note">{{ study.budget_note }}</span>{% endif %}</p>
<table><thead><tr><th>stage</th><th>status</th><th class="n">expected</th><th class="n">took</th><th>note</th></tr></thead>
<tbody>{% for st in study.stages %}{% set f = 'study.stages[' ~ loop.index0 ~ ']' %}<tr><td>{{ st.stage }}</td><td>{{ 'written' if st.stage == 'report' else st.status }}</td><td class="n">{{ fig(st.expected_s, 'dur', f ~ '.expected_s') }}</td>
<td class="n">{{ '(this file)' if st.stage == 'report' else fig(st.wall_s, 'dur', f ~ '.wall_s') }}</td><td>{{ study_note(st) }}</td></tr>{% endfor %}</tbody></table>
{% if study_speedup %}<p><strong>Speed-up:</strong> {{ study_speedup }}</p>{% endif %}
{% if study_accuracy %}<p><strong>Accuracy:</strong> {{ study_accuracy }}</p>{% endif %}
</section>
{% endif %}
{% if diff %}
{% set st = diff.step_time_us %}
<section id="diff">
<h2>Before / after (trainprof diff)</h2>
{% if st.base and st.new %}<p>Step time {{ st.base|us }} → {{ st.new|us }}{% if diff_unlike %} (steps of different tokens: the study's per-token figure compares them){% elif st.speedup %}: <strong>{{ '%.2f'|format(st.speedup) }}× faster</strong>{% endif %}{% if st.source %} <span class="note">({{ st.source }})</span>{% endif %}</p>{% endif %}
{% if diff.base and diff.new %}<p class="note">{{ diff.base.file }} → {{ diff.new.file }}</p>{% endif %}
<h3>{{ diff_ops_title }}</h3>
<table><thead><tr><th>operator</th><th class="n">before / step</th><th class="n">after / step</th><th class="n">Δ</th><th class="n">change</th></tr></thead>
<tbody>{% for o in diff.ops.top %}<tr><td class="name">{{ o.name|short }}</td><td class="n">{{ o.base_us_per_step|us }}</td><td class="n">{{ o.new_us_per_step|us }}</td>
<td class="n">{{ o.delta_us_per_step|sus }}</td><td class="n">{{ diff_change(o) }}</td></tr>{% endfor %}</tbody></table>
{% if diff.ops.top|selectattr('small_base')|list %}<p class="note">A base under 1% of the step (or 10 µs) gets no percentage: one more call would double it. Rows are ranked by the change in µs per step.</p>{% endif %}
{% if diff_gpu and diff.kernels.top %}<h3>Kernels per step</h3>
<table><thead><tr><th>kernel</th><th class="n">before / step</th><th class="n">after / step</th><th class="n">Δ</th><th class="n">change</th></tr></thead>
<tbody>{% for o in diff.kernels.top %}<tr><td class="name">{{ o.name|short }}</td><td class="n">{{ o.base_us_per_step|us }}</td><td class="n">{{ o.new_us_per_step|us }}</td>
<td class="n">{{ o.delta_us_per_step|sus }}</td><td class="n">{{ diff_change(o) }}</td></tr>{% endfor %}</tbody></table>{% endif %}
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
{% if memory[key] is not none %}<tr><td>{{ label }}</td><td class="n">{{ fig(memory[key], 'bytes', 'memory.' ~ key) }}</td></tr>{% endif %}
{% endfor %}
</tbody></table>
{% if memory.max_micro_batch %}<p>Largest micro-batch that fits: <strong>{{ memory.max_micro_batch }}</strong>{% if memory.device.memory_limit_bytes %} (limit {{ memory.device.memory_limit_bytes|gib }}){% endif %}.</p>{% endif %}
{% if memory.ladder %}
<h3>Memory ladder</h3>
<table><thead><tr><th>step</th><th>change</th><th>status</th><th class="n">measured</th><th class="n">analytic</th><th class="n">step time</th></tr></thead><tbody>
{% for l in memory.ladder %}{% set f = 'memory.ladder[' ~ loop.index0 ~ ']' %}<tr><td>{{ l.step }}</td><td>{{ l.change }}</td><td>{{ l.status }}</td>
<td class="n">{% if l.measured_above_baseline_bytes is not none %}{{ fig(l.measured_above_baseline_bytes, 'bytes', f ~ '.measured_above_baseline_bytes') }}{% else %}{{ fig(l.measured_peak_bytes, 'bytes', f ~ '.measured_peak_bytes') }}{% endif %}</td><td class="n">{{ fig(l.analytic_peak_bytes, 'bytes', f ~ '.analytic_peak_bytes') }}</td><td class="n">{{ fig(l.step_time_s, 's', f ~ '.step_time_s') }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
</section>
{% endif %}
{% if ettr %}
<section id="ettr">
<h2>Effective training time ratio</h2>
<p>ETTR <strong>{{ fig(ettr.ettr, 'frac', 'ettr.ettr') }}</strong>: {{ fig(ettr.productive_s, 'num2', 'ettr.productive_s') }} s of productive steps in {{ fig(ettr.wall_s, 'num2', 'ettr.wall_s') }} s of wall time
{% if ettr.sessions %}(sessions: {{ ettr.sessions }}, failures: {{ ettr.failures }}){% endif %}.</p>
{% if ettr.lost_s %}<table><thead><tr><th>lost to</th><th class="n">seconds</th><th class="n">share of wall time</th></tr></thead><tbody>
{% for k, v in ettr.lost_s.items() %}<tr><td>{{ k|replace('_', ' ') }}</td><td class="n">{{ fig(v, 'num2', 'ettr.lost_s' ~ key(k)) }}</td><td class="n">{{ fig(ettr.lost_pct.get(k), 'pct', 'ettr.lost_pct' ~ key(k)) }}</td></tr>{% endfor %}</tbody></table>{% endif %}
</section>
{% endif %}
{% if multi or (run and run.get('distributed')) %}
<section id="ranks">
<h2>Ranks</h2>
{% if multi %}
<p>{{ multi.ranks }} ranks analysed; {% if multi.step_time_us %}step time {{ multi.step_time_us.min|us }} – {{ multi.step_time_us.max|us }} (median {{ multi.step_time_us.median|us }}){% else %}no steps: each row is a whole trace{% endif %}.</p>
{% if ranks_chart %}<div class="chart vl" id="{{ ranks_chart }}"></div>{% endif %}
{% set slow = multi.stragglers %}
<table><thead><tr><th>rank</th><th class="n">step</th><th class="n">compute</th><th class="n">communication</th><th class="n">idle</th><th class="n">waiting for others</th><th></th></tr></thead><tbody>
{% for p in multi.per_rank %}{% set f = 'analysis.multi_rank.per_rank[' ~ loop.index0 ~ ']' %}<tr><td>{{ p.rank }}</td><td class="n">{{ fig(p.step_time_us, 'us', f ~ '.step_time_us') }}</td><td class="n">{{ fig(p.compute_us, 'us', f ~ '.compute_us') }}</td><td class="n">{{ fig(p.communication_us, 'us', f ~ '.communication_us') }}</td>
<td class="n">{{ fig(p.idle_us, 'us', f ~ '.idle_us') }}</td><td class="n">{{ fig(p.wait_us, 'us', f ~ '.wait_us') }}</td><td>{% for x in slow if x.rank == p.rank %}<span class="bad">straggler (+{{ '%.1f'|format(x.compute_excess_pct) }}% compute)</span>{% endfor %}</td></tr>{% endfor %}
</tbody></table>
{% set cj = multi.collectives %}
{% if cj %}
<h3>Collectives across ranks</h3>
<p>{{ cj.matched }} collectives matched by content (process group, op, size){% if not cj.consistent %}; unmatched per rank: {{ cj.unmatched }}{% endif %}{% if cj.world_size > cj.ranks %}; {{ cj.ranks }} of {{ cj.world_size }} ranks, so waits and skews are among these only{% endif %}. Clocks aligned on collective ends; busbw with nccl-tests' factors.</p>
<table><thead><tr><th>group</th><th>op</th><th class="n">count</th><th class="n">bytes</th><th class="n">latency p50</th><th class="n">skew p50</th><th class="n">skew max</th><th class="n">busbw p50 (GB/s)</th><th class="n">overlap with compute p50</th></tr></thead><tbody>
{% for g in cj.groups %}{% set f = 'analysis.multi_rank.collectives.groups[' ~ loop.index0 ~ ']' %}<tr><td>{{ g.group }}</td><td>{{ g.op }}</td><td class="n">{{ fig(g.count, 'int', f ~ '.count') }}</td><td class="n">{{ '{:,}'.format(g.bytes) if g.bytes else '—' }}</td><td class="n">{{ fig(g.median_latency_us, 'us', f ~ '.median_latency_us') }}</td><td class="n">{{ fig(g.median_skew_us, 'us', f ~ '.median_skew_us') }}</td><td class="n">{{ fig(g.max_skew_us, 'us', f ~ '.max_skew_us') }}</td><td class="n">{{ fig(g.median_busbw_gbs, 'g3', f ~ '.median_busbw_gbs') }}</td><td class="n">{{ fig(g.median_compute_overlap_pct, 'pct0', f ~ '.median_compute_overlap_pct') }}</td></tr>{% endfor %}
</tbody></table>
<table><thead><tr><th>rank</th><th class="n">waited</th><th class="n">others waited for it (mean)</th><th class="n">share of waits</th><th class="n">last to arrive</th><th class="n">clock offset</th></tr></thead><tbody>
{% for r in cj.per_rank %}{% set f = 'analysis.multi_rank.collectives.per_rank[' ~ loop.index0 ~ ']' %}<tr><td>{{ r.rank }}</td><td class="n">{{ fig(r.wait_us, 'us', f ~ '.wait_us') }}</td><td class="n">{% if r.others_wait_us|known is not none %}{{ fig(r.others_wait_us, 'us', f ~ '.others_wait_us') }}{% else %}{{ fig(r.caused_wait_us, 'us', f ~ '.caused_wait_us') }}{% endif %}</td><td class="n">{{ fig(r.caused_share_pct, 'pct0', f ~ '.caused_share_pct') }}</td><td class="n">{{ fig(r.last_count, 'int', f ~ '.last_count') }}</td><td class="n">{{ fig(r.clock_offset_us, 'us', f ~ '.clock_offset_us') }}</td></tr>{% endfor %}
</tbody></table>
{% for n in (cj.notes|known or []) %}<p class="note">{{ n }}</p>{% endfor %}
{% if cj.lateness %}<p class="note">Host step entry, shown for information (the CPU runs ahead of the GPU: only the waits at the collectives name a rank), steps {{ cj.lateness.steps[0] }}–{{ cj.lateness.steps[-1] }} (median / max): {% for r in cj.lateness.per_rank %}rank {{ r.rank }} {{ r.median_late_us|us }} / {{ r.max_late_us|us }}{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% else %}
<p class="note">{{ 'Per step' if multi.step_time_us else 'Whole traces (no steps)' }}. A straggler computes more than the median rank by over {{ multi.threshold_pct|known }}%, and the others wait for it in collectives.</p>
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

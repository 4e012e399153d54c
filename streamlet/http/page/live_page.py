"""The live page at `/`: one self-contained HTML document (inline CSS, SVG and JavaScript).

The topology is drawn once, server-side (`streamlet.topology_render.to_svg`, as `streamlet describe --format svg`
draws it); everything else is filled from
`status.json` every two seconds: state, tasks (active, restoring with progress, standby), lag per
partition, throughput / latency / lag charts over the data's last minutes, and the processed,
dead-lettered and skipped totals. Links are relative, so the page works wherever the app is mounted.
"""

from __future__ import annotations

from html import escape
from typing import Any

from streamlet.topology_render import to_svg

_STYLE = """
body{font-family:sans-serif;margin:20px;color:#222}h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;background:#ccc;font-size:13px}
.badge.RUNNING{background:#b7e4c7}.badge.REBALANCING{background:#ffe8a3}.badge.ERROR{background:#f4a3a3}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.row{display:flex;gap:24px;flex-wrap:wrap}.num{font-size:22px;font-weight:bold}.card{min-width:150px}
nav a{margin-right:12px}svg.chart{border:1px solid #ddd;background:#fafafa}
"""

_SCRIPT = """
function fmt(x){return x===0?"0":x>=100?x.toFixed(0):x>=1?x.toFixed(1):x.toFixed(3)}
function chart(id,points,index,label){
  const svg=document.getElementById(id),w=360,h=110;
  if(!points.length){svg.innerHTML='<text x="8" y="20">no data yet</text>';return}
  const t0=points[0][0],t1=points[points.length-1][0]||t0+1,vmax=Math.max(...points.map(p=>p[index]),1e-9);
  const xy=points.map(p=>[(p[0]-t0)/Math.max(t1-t0,1)*(w-10)+5,h-15-(p[index]/vmax)*(h-30)]);
  svg.innerHTML='<polyline fill="none" stroke="#2b6cb0" stroke-width="1.5" points="'+xy.map(a=>a.join(',')).join(' ')
    +'"/><text x="6" y="13" font-size="11">'+label+' (max '+fmt(vmax)+', last '+fmt(points[points.length-1][index])
    +') over '+Math.round((t1-t0)/1000)+' s</text>';
}
function cells(values){return '<tr>'+values.map(v=>'<td>'+v+'</td>').join('')+'</tr>'}
async function refresh(){
  let s;
  try{s=await (await fetch('status.json',{cache:'no-store'})).json()}catch(e){return}
  document.getElementById('state').textContent=s.state;document.getElementById('state').className='badge '+s.state;
  const last=s.history.length?s.history[s.history.length-1]:[0,0,0,0];
  document.getElementById('throughput').textContent=fmt(last[1]);
  document.getElementById('latency').textContent=fmt(last[2]);
  document.getElementById('lag-total').textContent=s.lag.reduce((a,l)=>a+l.lag,0);
  document.getElementById('processed').textContent=s.totals.processed;
  document.getElementById('dead-lettered').textContent=s.totals.dead_lettered;
  document.getElementById('skipped').textContent=s.totals.skipped;
  document.getElementById('tasks').innerHTML='<tr><th>task</th><th>role</th><th>partitions</th><th>progress</th></tr>'
    +s.tasks.map(t=>cells([t.task,t.role,(t.partitions||[]).join(', '),
      t.role==='restoring'?(t.restored+' restored, '+(t.remaining===null?'?':t.remaining)+' to go')
      :t.role==='active'?t.processed+' processed':''])).join('');
  document.getElementById('lag').innerHTML='<tr><th>topic</th><th>partition</th><th>lag</th></tr>'
    +s.lag.map(l=>cells([l.topic,l.partition,l.lag])).join('');
  chart('chart-throughput',s.history,1,'records/s');chart('chart-latency',s.history,2,'e2e latency ms');
  chart('chart-lag',s.history,3,'lag');
  document.body.dataset.loaded='true';
}
refresh();setInterval(refresh,2000);
"""


def live_page(streams: Any) -> str:
    """The page's HTML for `streams` (a `KafkaStreams`)."""
    app_id = escape(streams.config.application_id)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{app_id} · streamlet</title>
<style>{_STYLE}</style></head><body>
<h1>{app_id} <span id="state" class="badge">{escape(streams.state.name)}</span></h1>
<nav><a href="metrics">/metrics</a><a href="health/live">/health/live</a><a href="health/ready">/health/ready</a>
<a href="metadata">/metadata</a><a href="status.json">/status.json</a></nav>
<div class="row">
<div class="card">records/s<div class="num" id="throughput">-</div></div>
<div class="card">e2e latency ms<div class="num" id="latency">-</div></div>
<div class="card">total lag<div class="num" id="lag-total">-</div></div>
<div class="card">processed<div class="num" id="processed">-</div></div>
<div class="card">dead-lettered<div class="num" id="dead-lettered">-</div></div>
<div class="card">skipped<div class="num" id="skipped">-</div></div></div>
<h2>Last minutes</h2><div class="row"><svg class="chart" id="chart-throughput" width="360" height="110"></svg>
<svg class="chart" id="chart-latency" width="360" height="110"></svg>
<svg class="chart" id="chart-lag" width="360" height="110"></svg></div>
<div class="row"><div><h2>Tasks</h2><table id="tasks"></table></div>
<div><h2>Lag per partition</h2><table id="lag"></table></div></div>
<h2>Topology</h2>{to_svg(streams.topology.describe())}
<script>{_SCRIPT}</script></body></html>"""

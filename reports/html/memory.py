"""`perfkit memory FILE --html OUT.html`: one self-contained page (no CDN, no network).

The page holds its data as JSON in a `<script type="application/json">` element (every `<`, `>`
and `&` written as a \\u escape, so no name from the input can close the element) and draws it
with the inline script below into SVG: the timeline (at most TIMELINE_POINTS points, each the
highest event of its slice; a time-range filter redraws a part), the allocations alive at the
peak (a table the script fills, largest first) and a segment map (one bar per segment, blocks
coloured by state). Tables of numbers are written here, escaped (`perfkit.reports.html.text.esc`).
The script puts text into the page only through `textContent`, never as markup.
"""

from __future__ import annotations

import json
from typing import Any

from perfkit.analyzers.memory.analysis import MemoryAnalysis
from perfkit.analyzers.memory.downsample import downsample
from perfkit.analyzers.memory.peak import stack_top
from perfkit.reports.html.text import esc
from perfkit.reports.memory.rows import fragmentation_rows, oom_rows
from perfkit.reports.memory.units import fmt_bytes

TIMELINE_POINTS = 2000
ALIVE_ROWS = 500
SEGMENTS_DRAWN = 300
BLOCKS_PER_SEGMENT = 400

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}svg{background:#fafafa;border:1px solid #ddd}
.seg{font-size:11px}.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px}
"""

SCRIPT = r"""
(function(){
const D = JSON.parse(document.getElementById('memory-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);return e;}
function fmt(b){const u=[[2**40,'TiB'],[2**30,'GiB'],[2**20,'MiB'],[2**10,'KiB']];
  for(const [s,n] of u){if(Math.abs(b)>=s)return (b/s).toPrecision(3)+' '+n;}return b+' B';}
const T = D.timeline, W = 900, H = 260;
function draw(lo, hi){
  const svg = document.getElementById('timeline-svg'); while(svg.firstChild) svg.removeChild(svg.firstChild);
  const idx = []; for(let i=0;i<T.x.length;i++){ if(T.x[i]>=lo && T.x[i]<=hi) idx.push(i); }
  const status = document.getElementById('timeline-status');
  if(idx.length===0){ status.textContent='no events in this range'; return; }
  let top = 1; for(const i of idx){ top=Math.max(top,T.allocated[i],T.reserved[i],T.active[i]); }
  const x0 = T.x[idx[0]], x1 = Math.max(T.x[idx[idx.length-1]], x0+1e-9);
  const px = v => 40+(v-x0)/(x1-x0)*(W-50), py = v => H-20-(v/top)*(H-30);
  for(const [key,color] of [['reserved','#999'],['active','#e69f00'],['allocated','#0072b2']]){
    const pts = idx.map(i=>px(T.x[i]).toFixed(1)+','+py(T[key][i]).toFixed(1)).join(' ');
    svg.appendChild(el('polyline',{points:pts,fill:'none',stroke:color,'stroke-width':1.5,'data-series':key}));
  }
  const label = el('text',{x:4,y:14,'font-size':11}); label.textContent = fmt(top); svg.appendChild(label);
  status.textContent = idx.length+' points drawn ('+T.unit+' '+x0.toFixed(3)+' to '+x1.toFixed(3)+')';
}
const lo = document.getElementById('range-lo'), hi = document.getElementById('range-hi');
const xmin = T.x.length?T.x[0]:0, xmax = T.x.length?T.x[T.x.length-1]:1;
function redraw(){ const a=Number(lo.value)/1000, b=Number(hi.value)/1000;
  draw(xmin+(xmax-xmin)*Math.min(a,b), xmin+(xmax-xmin)*Math.max(a,b)); }
lo.addEventListener('input', redraw); hi.addEventListener('input', redraw); redraw();
const body = document.getElementById('alive-body');
for(const a of D.alive){ const tr=document.createElement('tr');
  for(const [v,num] of [[fmt(a[0]),1],[a[1],0],[a[2],0],[a[3],0]]){
    const td=document.createElement('td'); td.textContent=v; if(num) td.className='num'; tr.appendChild(td); }
  body.appendChild(tr); }
document.getElementById('alive-status').textContent = D.alive.length+' of '+D.alive_total+' allocations shown';
const map = document.getElementById('segment-svg'), colors = {active_allocated:'#0072b2', active_pending_free:'#e69f00', inactive:'#ddd'};
const rowH = 14; map.setAttribute('height', Math.max(rowH, D.segments.length*rowH));
D.segments.forEach((s,r)=>{ let x=0; const total=Math.max(s.total,1);
  for(const [size,state] of s.blocks){ const w=size/total*(W-160);
    map.appendChild(el('rect',{x:150+x,y:r*rowH+1,width:Math.max(w,0.5),height:rowH-2,fill:colors[state]||'#c00'})); x+=w; }
  const t=el('text',{x:2,y:r*rowH+11,class:'seg'}); t.textContent=fmt(s.total)+(s.pool?' (pool)':'')+(s.exp?' (exp)':''); map.appendChild(t); });
document.getElementById('segment-status').textContent = D.segments.length+' of '+D.segments_total+' segments drawn';
})();
"""


def _payload(a: MemoryAnalysis) -> dict[str, Any]:
    s = downsample(a.timeline, TIMELINE_POINTS)
    timed = all(t is not None for t in s.time_ns) and s.time_ns
    t0 = s.time_ns[0] if timed else 0
    x = [((t or 0) - (t0 or 0)) / 1e6 for t in s.time_ns] if timed else [float(p) for p in s.position]
    segments = sorted(a.segments or [], key=lambda g: -g.total_bytes)
    return {
        "timeline": {"x": x, "unit": "ms" if timed else "event", "allocated": s.allocated_bytes,
                     "active": s.active_bytes, "reserved": s.reserved_bytes},
        "alive": [[x.size_bytes, x.category, x.stage or "-", stack_top(x)] for x in a.alive[:ALIVE_ROWS]],
        "alive_total": len(a.alive),
        "segments": [{"total": g.total_bytes, "pool": g.is_private_pool, "exp": g.is_expandable,
                      "blocks": [[b.size_bytes, b.state] for b in g.blocks[:BLOCKS_PER_SEGMENT]]}
                     for g in segments[:SEGMENTS_DRAWN]],
        "segments_total": len(segments),
    }


def _json_script(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _table(headers: list[str], rows: list[list[str]], numeric: tuple[int, ...] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="num">{esc(v)}</td>' if i in numeric else f"<td>{esc(v)}</td>"
                                    for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary(a: MemoryAnalysis) -> str:
    p = a.timeline.peak
    rows = [["input", f"{a.path} ({a.kind})"], ["device", f"{a.device} of {', '.join(a.devices)}"],
            ["events", str(len(a.timeline))], ["peak allocated", fmt_bytes(p.allocated_bytes)],
            ["reserved at peak", fmt_bytes(p.reserved_bytes)],
            ["allocated before the input", fmt_bytes(p.baseline_bytes)],
            ["alive at peak", str(len(a.alive))]]
    if a.timeline.reported_checked:
        t = a.timeline
        rows.append(["replay check", f"{t.reported_checked - t.reported_mismatches} of {t.reported_checked} "
                     "events match the input's own total"])
    rows += [["impossible in the input", f"{n} x {what}"] for what, n in a.timeline.impossible.items()]
    return _table(["", ""], rows)


def _sections(a: MemoryAnalysis) -> list[str]:
    out = ["<h2>Categories</h2>", _table(
        ["category", "alive at peak", "allocated", "allocations", "decided by"],
        [[c.category, fmt_bytes(c.alive_at_peak_bytes), fmt_bytes(c.allocated_bytes), str(c.count),
          ", ".join(c.sources)] for c in a.categories], (1, 2, 3))]
    if a.ops:
        out += ["<h2>Operators</h2><p>peak: highest rise during one call; net: end - start, summed</p>",
                _table(["op", "calls", "peak", "net", "allocated"],
                       [[o.op, str(o.calls), fmt_bytes(o.peak_bytes), fmt_bytes(o.net_bytes, sign=True),
                         fmt_bytes(o.allocated_bytes)] for o in a.ops[:100]], (1, 2, 3, 4))]
    if a.fragmentation is not None:
        out += ["<h2>Fragmentation</h2>",
                _table(["number", "value", "definition"], [list(r) for r in fragmentation_rows(a.fragmentation)], (1,))]
    for i, o in enumerate(a.ooms):
        out += [f"<h2>Out of memory #{i + 1}</h2>", _table(["", ""], [list(r) for r in oom_rows(o)]),
                f"<p>{esc(o.text)}</p>"]
    return out


def memory_html(a: MemoryAnalysis) -> str:
    legend = ('<p class="legend"><span style="background:#0072b2"></span>allocated'
              '<span style="background:#e69f00"></span>active<span style="background:#999"></span>reserved</p>')
    body = [
        f"<h1>Memory: {esc(a.path)}</h1>", _summary(a),
        "<h2>Timeline</h2>", legend,
        '<p>from <input id="range-lo" type="range" min="0" max="1000" value="0"> to '
        '<input id="range-hi" type="range" min="0" max="1000" value="1000"> '
        '<span id="timeline-status">(the script draws here)</span></p>',
        '<svg id="timeline-svg" width="900" height="260"></svg>',
        "<h2>Alive at the peak</h2>", '<p id="alive-status"></p>',
        '<table><thead><tr><th>bytes</th><th>category</th><th>stage</th><th>stack top</th></tr></thead>'
        '<tbody id="alive-body"></tbody></table>',
        *_sections(a),
        "<h2>Segment map</h2>",
        '<p class="legend">blocks: <span style="background:#0072b2"></span>allocated'
        '<span style="background:#e69f00"></span>pending free<span style="background:#ddd"></span>free</p>',
        '<p id="segment-status"></p><svg id="segment-svg" width="900" height="14"></svg>',
    ]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>perfkit memory: {esc(a.path)}</title><style>{CSS}</style></head><body>"
            + "\n".join(body)
            + f'<script type="application/json" id="memory-data">{_json_script(_payload(a))}</script>'
            + f"<script>{SCRIPT}</script></body></html>\n")

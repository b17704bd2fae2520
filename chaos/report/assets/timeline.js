/* The run's timeline on a canvas: ops per process, nemesis bands, system events.
   Data columns come from chaos/report/timeline.py; times are integer ticks (D.unit per second),
   delta-encoded. Hit-testing is a binary search per lane, so hover stays cheap at 100k ops. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("timeline-data").textContent);
  var canvas = document.getElementById("tl-canvas");
  var wrap = document.getElementById("timeline-wrap");
  var tip = document.getElementById("tl-tip");
  var ctx = canvas.getContext("2d");
  var U = D.unit, n = D.i.length, nL = D.lanes.length, nEL = D.evLanes.length;
  var TYPE_COLOURS = ["#5cb85c", "#e5534b", "#f0ad4e"];
  var KIND_COLOURS = {
    "commit": "#2e7d32", "suppressed": "#81c784", "delivery": "#1e88e5", "publish": "#8e24aa",
    "publish-ack-lost": "#ad1457", "ack": "#546e7a", "crash": "#d32f2f", "fault-point": "#6a1b9a",
    "task-accepted": "#90a4ae", "marked-published": "#b39ddb", "lock-acquired": "#1565c0",
    "write": "#ef6c00", "renewal-failed": "#d32f2f", "job-start": "#78909c", "job-end": "#78909c"
  };
  var PALETTE = ["#3949ab", "#00897b", "#c0ca33", "#6d4c41", "#f4511e", "#5e35b1", "#039be5"];
  function kindColour(k) {
    var name = D.kinds[k];
    return KIND_COLOURS[name] || PALETTE[k % PALETTE.length];
  }

  var S = new Float64Array(n), E = new Float64Array(n), EM = new Float64Array(n);
  var acc = 0, k, l;
  for (k = 0; k < n; k++) { acc += D.s[k]; S[k] = acc; E[k] = acc + D.d[k]; }
  // Running max of ends within each lane: monotone, so culling can binary-search it even when a
  // never-completed op overlaps the ops after it.
  for (l = 0; l < nL; l++) {
    var m = -Infinity;
    for (k = D.laneStart[l]; k < D.laneStart[l + 1]; k++) { m = Math.max(m, E[k]); EM[k] = m; }
  }
  var ne = D.et.length, ET = new Float64Array(ne);
  acc = 0;
  for (k = 0; k < ne; k++) { acc += D.et[k]; ET[k] = acc; }

  var full = Math.max(D.end, 1);
  for (k = 0; k < n; k++) full = Math.max(full, E[k]);
  var v0 = 0, v1 = full * 1.01;
  var LEFT = 58, TOP = 22, laneH = Math.max(4, Math.min(22, Math.floor(520 / Math.max(nL, 1))));
  var evH = nEL > 12 ? 6 : 11, GAP = nEL ? 10 : 0;
  var lanesBottom = TOP + nL * laneH, height = lanesBottom + GAP + nEL * evH + 18;
  var W = 0, hover = null, drag = null, pending = false;

  function lowerBound(arr, lo, hi, x) {
    while (lo < hi) { var mid = (lo + hi) >>> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function upperBound(arr, lo, hi, x) {
    while (lo < hi) { var mid = (lo + hi) >>> 1; if (arr[mid] <= x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function xOf(t) { return LEFT + (t - v0) / (v1 - v0) * (W - LEFT - 8); }
  function tOf(x) { return v0 + (x - LEFT) / (W - LEFT - 8) * (v1 - v0); }
  function laneY(i) { return TOP + i * laneH; }
  function evY(i) { return lanesBottom + GAP + i * evH; }

  function niceStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), r = raw / p;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * p;
  }
  function fmtT(t, step) {
    // As many decimals as the tick step needs: "12 s", "12.5 s", "12.345 s".
    var d = Math.max(0, Math.min(4, -Math.floor(Math.log10((step || (v1 - v0) / 10) / U))));
    return (t / U).toFixed(d) + " s";
  }

  function resize() {
    var dpr = window.devicePixelRatio || 1;
    W = Math.max(320, wrap.clientWidth);
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = W + "px";
    canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function draw() {
    pending = false;
    var t0 = performance.now(), drawn = 0;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, height);
    ctx.font = "11px system-ui, sans-serif";
    for (l = 0; l < nL; l++) {
      if (l % 2) { ctx.fillStyle = "#f6f7f9"; ctx.fillRect(LEFT, laneY(l), W - LEFT, laneH); }
    }
    var bandBottom = nEL ? evY(nEL) : lanesBottom;
    var labelEvery = Math.ceil(11 / laneH);
    ctx.fillStyle = "#444";
    for (l = 0; l < nL; l += labelEvery) {
      var name = D.lanes[l];
      ctx.fillText(/^\d+$/.test(name) ? "p" + name : name, 4, laneY(l) + Math.min(laneH, 11) - 1);
    }
    var pad = laneH > 6 ? 1.5 : 0.5;
    for (l = 0; l < nL; l++) {
      var lo = D.laneStart[l], hi = D.laneStart[l + 1];
      var i = lowerBound(EM, lo, hi, v0), y = laneY(l) + pad, h = laneH - 2 * pad;
      var curT = -1, cx0 = 0, cx1 = -1;
      for (; i < hi && S[i] <= v1; i++) {
        if (E[i] < v0) continue;
        var xs = Math.floor(xOf(S[i])), xe = Math.max(Math.ceil(xOf(E[i])), xs + 1);
        var ty = D.t[i];
        // Ops narrower than a pixel merge into one rectangle per colour: 100k ops never mean
        // 100k fillRect calls at full zoom-out.
        if (ty === curT && xs <= cx1) { if (xe > cx1) cx1 = xe; continue; }
        if (curT >= 0) { ctx.fillStyle = TYPE_COLOURS[curT]; ctx.fillRect(cx0, y, cx1 - cx0, h); drawn++; }
        curT = ty; cx0 = xs; cx1 = xe;
      }
      if (curT >= 0) { ctx.fillStyle = TYPE_COLOURS[curT]; ctx.fillRect(cx0, y, cx1 - cx0, h); drawn++; }
    }
    for (l = 0; l < nEL; l++) {
      var a = lowerBound(ET, D.evStart[l], D.evStart[l + 1], v0);
      var b = upperBound(ET, a, D.evStart[l + 1], v1), lastX = -1;
      ctx.fillStyle = "#444";
      ctx.fillText(D.evLanes[l], 4, evY(l) + evH - 1);
      for (var j = a; j < b; j++) {
        var x = Math.round(xOf(ET[j]));
        // One mark per pixel column: zoomed out, a column holds dozens of events; zoom in to
        // tell them apart (hover names each).
        if (x === lastX) continue;
        lastX = x;
        ctx.fillStyle = kindColour(D.ek[j]);
        ctx.fillRect(x, evY(l) + 1, 2, evH - 2);
        drawn++;
      }
    }
    // Bands are laid over the ops, not under them: a busy run has no gaps to show a band through.
    D.bands.forEach(function (b) {
      if (b[1] < v0 || b[0] > v1) return;
      var x0 = Math.max(LEFT, xOf(b[0])), x1 = Math.min(W, Math.max(xOf(b[1]), x0 + 2));
      ctx.globalAlpha = 0.4; ctx.fillStyle = b[4]; ctx.fillRect(x0, TOP, x1 - x0, bandBottom - TOP);
      ctx.globalAlpha = 1; ctx.fillStyle = b[4];
      ctx.fillRect(x0, TOP - 3, x1 - x0, 3);
    });
    var labelRow = 0;
    D.bands.forEach(function (b) {
      if (b[1] < v0 || b[0] > v1) return;
      var x0 = Math.max(LEFT, xOf(b[0])), x1 = Math.min(W, xOf(b[1]));
      var text = b[3] + (b[5] ? " (never healed)" : "");
      var w = ctx.measureText(text).width + 6;
      if (x1 - x0 < Math.min(w, 60)) return;
      var y = TOP + 1 + (labelRow++ % 2) * 13;
      ctx.fillStyle = "rgba(255,255,255,0.8)"; ctx.fillRect(x0 + 1, y, Math.min(w, x1 - x0 - 2), 12);
      ctx.fillStyle = "#7a4a00"; ctx.fillText(text, x0 + 4, y + 10, x1 - x0 - 8);
    });
    if (hover && hover.op !== undefined) {
      var ho = hover.op, hl = hover.lane;
      ctx.strokeStyle = "#000"; ctx.lineWidth = 1.5;
      var hx = xOf(S[ho]);
      ctx.strokeRect(hx - 1, laneY(hl), Math.max(xOf(E[ho]) - hx, 1) + 2, laneH);
    }
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, TOP - 2); ctx.fillRect(0, height - 16, W, 16);
    var step = niceStep(v1 - v0), first = Math.ceil(v0 / step) * step;
    ctx.fillStyle = "#333"; ctx.strokeStyle = "#ccc"; ctx.lineWidth = 1;
    for (var t = first; t <= v1; t += step) {
      var tx = Math.round(xOf(t)) + 0.5;
      if (tx < LEFT) continue;
      ctx.beginPath(); ctx.moveTo(tx, TOP - 6); ctx.lineTo(tx, TOP); ctx.stroke();
      ctx.fillText(fmtT(t, step), tx + 2, TOP - 8);
    }
    ctx.fillStyle = "#666";
    ctx.fillText("showing " + fmtT(v0) + " – " + fmtT(v1) + " of " + fmtT(full), LEFT, height - 4);
    var ms = performance.now() - t0;
    canvas.setAttribute("data-draw-ms", ms.toFixed(1));
    canvas.setAttribute("data-drawn", String(drawn));
    api.lastDrawMs = ms;
  }
  function schedule() { if (!pending) { pending = true; requestAnimationFrame(draw); } }

  function opAt(x, y) {
    var lane = Math.floor((y - TOP) / laneH);
    if (lane < 0 || lane >= nL || x < LEFT) return null;
    var t = tOf(x), tol = 3 * (v1 - v0) / (W - LEFT - 8);
    var lo = D.laneStart[lane], hi = D.laneStart[lane + 1];
    var j = upperBound(S, lo, hi, t + tol) - 1, best = -1, bestD = Infinity;
    // Walk back only while an earlier op can still reach t (EM is the running max of ends).
    for (var c = 0; j >= lo && c < 64 && EM[j] >= t - tol; j--, c++) {
      if (E[j] >= t - tol) { var dd = E[j] - S[j]; if (dd < bestD) { bestD = dd; best = j; } }
    }
    return best < 0 ? null : { op: best, lane: lane };
  }
  function eventAt(x, y) {
    if (!nEL || y < evY(0)) return null;
    var lane = Math.floor((y - evY(0)) / evH);
    if (lane < 0 || lane >= nEL) return null;
    var t = tOf(x), tol = 3 * (v1 - v0) / (W - LEFT - 8);
    var lo = D.evStart[lane], hi = D.evStart[lane + 1];
    var j = lowerBound(ET, lo, hi, t - tol);
    if (j < hi && ET[j] <= t + tol) return { ev: j, lane: lane };
    return null;
  }
  function bandAt(x) {
    var t = tOf(x), hits = [];
    D.bands.forEach(function (b) { if (b[0] <= t && t <= b[1]) hits.push(b); });
    return hits;
  }
  function describe(x, y) {
    var lines = [], h = opAt(x, y), ev = h ? null : eventAt(x, y);
    if (h) {
      var o = h.op;
      lines.push("op #" + D.i[o] + " " + D.fs[D.f[o]] + " " + D.types[D.t[o]] + " · process " + D.lanes[h.lane]);
      lines.push((S[o] / U).toFixed(3) + " → " + (E[o] / U).toFixed(3) + " s (" + ((E[o] - S[o]) / U * 1000).toFixed(1) + " ms)");
      if (D.v[o]) lines.push(D.v[o]);
    } else if (ev) {
      var q = ev.ev;
      lines.push(D.kinds[D.ek[q]] + " · " + D.comps[D.ec[q]] + "@" + D.evLanes[ev.lane] + " at " + (ET[q] / U).toFixed(3) + " s");
      if (D.eTask[q]) lines.push("task " + D.eTask[q]);
    }
    bandAt(x).forEach(function (b) {
      lines.push("⚡ " + b[3] + " [" + b[6] + "] " + (b[0] / U).toFixed(3) + "–" + (b[1] / U).toFixed(3) + " s" + (b[5] ? " (never healed)" : ""));
    });
    return { text: lines.join("\n"), hit: h };
  }
  function showTip(x, y) {
    var d = describe(x, y);
    hover = d.hit;
    if (!d.text || x < LEFT) { tip.hidden = true; schedule(); return d; }
    tip.textContent = d.text;
    tip.hidden = false;
    tip.style.left = Math.min(x + 14, Math.max(0, W - 360)) + "px";
    tip.style.top = (y + 16) + "px";
    schedule();
    return d;
  }
  function zoomAt(x, factor) {
    var t = tOf(x), span = Math.max((v1 - v0) * factor, 10);
    span = Math.min(span, full * 1.5);
    var r = (t - v0) / (v1 - v0);
    v0 = t - r * span; v1 = v0 + span;
    schedule();
  }
  function pos(ev) { var r = canvas.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; }

  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    zoomAt(pos(ev)[0], Math.exp(ev.deltaY * 0.0015));
  }, { passive: false });
  canvas.addEventListener("mousedown", function (ev) { drag = { x: pos(ev)[0], v0: v0, v1: v1 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  canvas.addEventListener("mousemove", function (ev) {
    var p = pos(ev);
    if (drag) {
      var dt = (p[0] - drag.x) / (W - LEFT - 8) * (drag.v1 - drag.v0);
      v0 = drag.v0 - dt; v1 = drag.v1 - dt; tip.hidden = true; schedule();
      return;
    }
    showTip(p[0], p[1]);
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; hover = null; schedule(); });
  canvas.addEventListener("dblclick", function () { v0 = 0; v1 = full * 1.01; schedule(); });
  document.querySelectorAll("[data-zoom]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var z = btn.getAttribute("data-zoom"), mid = (W + LEFT) / 2;
      if (z === "in") zoomAt(mid, 0.5); else if (z === "out") zoomAt(mid, 2);
      else { v0 = 0; v1 = full * 1.01; schedule(); }
    });
  });
  window.addEventListener("resize", function () { resize(); schedule(); });

  var legend = document.getElementById("tl-kinds");
  if (legend) {
    legend.innerHTML = "";
    D.kinds.forEach(function (name, i) {
      var sw = document.createElement("span");
      sw.className = "sw"; sw.style.background = kindColour(i);
      legend.appendChild(sw);
      legend.appendChild(document.createTextNode(name + " "));
    });
  }
  // A small handle for tests and for poking at a run from the browser console.
  var api = {
    xOf: xOf, laneY: laneY, laneHeight: laneH, unit: U, start: S, end: E, index: D.i,
    laneStart: D.laneStart, describe: describe, showTip: showTip, draw: draw,
    zoom: function (a, b) { v0 = a * U; v1 = b * U; draw(); }, lastDrawMs: 0
  };
  window.chaosTimeline = api;
  resize();
  draw();
})();

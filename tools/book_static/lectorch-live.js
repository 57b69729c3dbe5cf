/* lectorch live panels: recompute the arithmetic panels of the static book in the page.
 *
 * Every number comes from window.LECTORCH_LIVE_DATA, which the book build writes from
 * lectorch.widgets.live.export_data() (the GPU spec table, bytes per element, link speeds,
 * optimizer state counts). The formulas below are the few products and sums of
 * lectorch.widgets.live.LIVE re-expressed in JavaScript; tests/test_browser.py sets random controls
 * in the page and compares the numbers each panel publishes (data-numbers on its result) with
 * lectorch's in Python. Panels without a live formula are snapshots: their controls are disabled.
 */
(function () {
  "use strict";

  // ---- formatting, as lectorch prints ------------------------------------------------------
  function gfmt(x, digits) {            // Python's f"{x:.{digits}g}"
    if (x === 0) return "0";
    if (!isFinite(x)) return String(x);
    var e = Number(Math.abs(x).toExponential(digits - 1).split("e")[1]);
    var s;
    if (e < -4 || e >= digits) {
      var parts = x.toExponential(digits - 1).split("e");
      var m = parts[0].indexOf(".") >= 0 ? parts[0].replace(/0+$/, "").replace(/\.$/, "") : parts[0];
      var ex = Number(parts[1]);
      s = m + "e" + (ex < 0 ? "-" : "+") + (Math.abs(ex) < 10 ? "0" : "") + Math.abs(ex);
    } else {
      s = x.toFixed(Math.max(0, digits - 1 - e));
      if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    }
    return s;
  }
  function commas(x, decimals) {
    return Number(x).toLocaleString("en-US", {minimumFractionDigits: decimals || 0,
                                              maximumFractionDigits: decimals || 0});
  }
  function scaled(n, base, units) {
    var i = 0;
    while (Math.abs(n) >= base && i < units.length - 1) { n /= base; i += 1; }
    return i === 0 ? n.toFixed(0) + " " + units[i] : n.toFixed(2) + " " + units[i];
  }
  var SI = ["B", "kB", "MB", "GB", "TB", "PB", "EB"], IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function formatBytes(n, binary) {
    if (binary === true) return scaled(n, 1024, IEC);
    if (binary === false) return scaled(n, 1000, SI);
    var si = scaled(n, 1000, SI), iec = scaled(n, 1024, IEC);
    return si === iec ? si : si + " (" + iec + ")";
  }
  function formatSeconds(s) {
    var units = [["s", 1], ["ms", 1e-3], ["µs", 1e-6]];
    for (var i = 0; i < units.length; i++) if (Math.abs(s) >= units[i][1]) return gfmt(s / units[i][1], 3) + " " + units[i][0];
    return gfmt(s / 1e-9, 3) + " ns";
  }
  function formatFlops(v, perS) {
    var unit = perS ? "FLOP/s" : "FLOPs";
    var p = [["Y", 1e24], ["Z", 1e21], ["E", 1e18], ["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
    for (var i = 0; i < p.length; i++) if (v >= p[i][1]) return gfmt(v / p[i][1], 4) + " " + p[i][0] + unit;
    return gfmt(v, 4) + " " + unit;
  }
  function siCount(x) {                 // lectorch.widgets.si_count
    var p = [["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]];
    for (var i = 0; i < p.length; i++) if (Math.abs(x) >= p[i][1]) return gfmt(x / p[i][1], 3) + p[i][0];
    return gfmt(x, 3);
  }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function table(rows) {
    return "<table>" + rows.map(function (r) { return "<tr><td>" + r[0] + "</td><td>" + r[1] + "</td></tr>"; }).join("") + "</table>";
  }
  function bars(items, unit) {          // horizontal bars: [label, value]
    var top = Math.max.apply(null, items.map(function (i) { return i[1]; }).concat([1e-300]));
    return '<div class="lp-bars">' + items.map(function (i) {
      return '<div class="lp-bar"><span class="lp-bar-label">' + esc(i[0]) + '</span><span class="lp-bar-track">' +
        '<span class="lp-bar-fill" style="width:' + (100 * i[1] / top).toFixed(1) + '%"></span></span>' +
        '<span class="lp-bar-value">' + esc(unit(i[1])) + "</span></div>";
    }).join("") + "</div>";
  }
  function fail(msg) { var e = new Error(msg); e.lectorchInput = true; throw e; }
  function positiveInt(name, v) {
    if (!(Number.isInteger(v) && v >= 1)) fail(name + " must be a whole number >= 1, got " + v);
    return v;
  }

  // ---- the live computations (lectorch.widgets.live.LIVE) -----------------------------------
  var LIVE = {
    napkin: function (v, D) {
      var gpu = D.gpus[v.gpu], peak = gpu.dense[v.dtype];
      if (peak === undefined) fail(gpu.name + " has no dense " + v.dtype + " peak on its datasheet");
      var flops = D.napkin.flops_per_param_token * v.params * v.tokens;
      var perS = v.num_gpus * peak * v.mfu;
      var days = flops / (perS * D.napkin.seconds_per_day);
      var perParam = D.napkin.setups[v.setup];
      var n = {training_flops: flops, cluster_flops_per_s: perS, days: days, gpu_hours: days * 24 * v.num_gpus,
               memory_needed_bytes: v.params * perParam, memory_available_bytes: gpu.memory_bytes * v.num_gpus,
               max_params: v.num_gpus * gpu.memory_bytes / perParam};
      var fits = n.memory_needed_bytes <= n.memory_available_bytes ? "fits" : "does <b>not</b> fit";
      var html = table([
        ["training FLOPs (6·N·T)", gfmt(flops, 3)],
        ["useful cluster FLOP/s", gfmt(perS, 3)],
        ["training time", "<b>" + commas(days) + " days</b> (" + commas(n.gpu_hours) + " GPU-hours)"],
        ["weights + gradients + optimizer state", formatBytes(n.memory_needed_bytes, false) + " — " + fits + " in " +
          formatBytes(n.memory_available_bytes, false)],
        ["largest model on this cluster", siCount(n.max_params) + " parameters (activations not counted)"]]);
      return {html: html, numbers: n};
    },
    tensor_bytes: function (v, D) {
      positiveInt("rows", v.rows); positiveInt("cols", v.cols);
      var el = v.rows * v.cols, n = {elements: el, bytes: el * D.float_bytes[v.dtype]};
      var lines = Object.keys(D.float_bytes).map(function (d) {
        var b = el * D.float_bytes[d]; n["bytes_" + d] = b;
        return "<tr style='font-weight:" + (d === v.dtype ? "bold" : "normal") + "'><td>" + d +
          "</td><td style='text-align:right'>" + commas(b) + "</td><td>" + formatBytes(b) + "</td></tr>";
      });
      var head = "<div>" + commas(v.rows) + " × " + commas(v.cols) + " = " + commas(el) + " elements × " +
        D.float_bytes[v.dtype] + " bytes (" + v.dtype + ") = <b>" + formatBytes(n.bytes) + "</b></div>";
      return {html: head + "<table><tr><th>dtype</th><th>bytes</th><th></th></tr>" + lines.join("") + "</table>",
              numbers: n};
    },
    transfer: function (v, D) {
      var nbytes = v.elements * D.transfer_bytes[v.dtype], n = {bytes: nbytes};
      var rows = [["bytes moved", "<b>" + commas(nbytes) + " B = " + formatBytes(nbytes) + "</b>"]];
      Object.keys(D.links).forEach(function (link) {
        var t = nbytes / D.links[link]; n["seconds " + link] = t;
        rows.push(["napkin: " + esc(link) + " at its peak", "<b>" + formatSeconds(t) + "</b>"]);
      });
      rows.push(["measured copy", "<i>run the notebook to measure your machine</i>"]);
      return {html: table(rows), numbers: n};
    },
    roofline: function (v, D) {
      var gpu = D.gpus[v.gpu], peak = gpu.dense[v.dtype], bw = gpu.bandwidth_bytes_per_s;
      if (peak === undefined) fail(gpu.name + " has no dense " + v.dtype + " peak on its datasheet");
      var flops = 2 * v.m * v.k * v.n, bytes = (v.m * v.k + v.k * v.n + v.m * v.n) * D.matmul_bytes[v.dtype];
      var I = flops / bytes, ridge = peak / bw, att = Math.min(peak, I * bw), bound = I >= ridge ? "compute" : "memory";
      var n = {flops: flops, bytes: bytes, intensity: I, ridge_point: ridge, attainable: att, mfu_max: att / peak,
               compute_bound: bound === "compute" ? 1 : 0};
      var html = table([
        ["matmul", "(" + commas(v.m) + ", " + commas(v.k) + ") @ (" + commas(v.k) + ", " + commas(v.n) + ") in " +
          v.dtype + ": " + gfmt(flops, 3) + " FLOPs, " + formatBytes(bytes, false) + " moved"],
        ["arithmetic intensity", commas(I, 1) + " FLOPs/byte"],
        ["ridge point", commas(ridge, 1) + " FLOPs/byte = " + gfmt(peak / 1e12, 6) + " TFLOP/s ÷ " +
          gfmt(bw / 1e12, 6) + " TB/s"],
        ["verdict", "<b>" + bound + "-bound</b>: at most " + formatFlops(att, true) + ", i.e. an MFU of at most " +
          (att / peak).toFixed(3)]]);
      return {html: html + rooflineSvg(gpu.name + ", " + v.dtype + " (datasheet)", peak, bw, I, att,
                                       "(" + v.m + ", " + v.k + ") @ (" + v.k + ", " + v.n + ")"), numbers: n};
    },
    backprop: function (v, D) {
      ["batch", "dim", "depth", "out_dim"].forEach(function (k) { positiveInt(k, v[k]); });
      var widths = [], i;
      for (i = 0; i < v.depth; i++) widths.push(v.dim);
      widths.push(v.out_dim);
      var fwd = 0, bw = 0, bi = 0, params = 0;
      for (i = 0; i + 1 < widths.length; i++) {
        var f = 2 * v.batch * widths[i] * widths[i + 1];
        fwd += f; bw += f; bi += (i > 0 || v.input_requires_grad) ? f : 0; params += widths[i] * widths[i + 1];
      }
      var n = {forward: fwd, backward_weight: bw, backward_input: bi, backward: bw + bi, total: fwd + bw + bi,
               num_parameters: params, ratio: (bw + bi) / fwd};
      var rows = [["forward", fwd], ["backward: weight grads", bw], ["backward: input grads", bi],
                  ["backward", bw + bi], ["total", n.total]];
      var html = "<p>" + v.depth + " layer" + (v.depth > 1 ? "s" : "") + ", widths " + v.dim + " → … → " + v.out_dim +
        ", " + commas(params) + " parameters, batch " + v.batch + "</p><table><tr><th></th><th>predicted</th></tr>" +
        rows.map(function (r) { return "<tr><td>" + r[0] + "</td><td style='text-align:right'>" + commas(r[1]) + "</td></tr>"; }).join("") +
        "</table><p>backward / forward = <b>" + n.ratio.toFixed(2) + "</b>; total / (6 × batch × parameters) = <b>" +
        (n.total / (6 * v.batch * params)).toFixed(3) + "</b></p>" +
        "<p class='lp-aside'>The notebook also counts them with FlopCounterMode.</p>" +
        bars(rows.slice(0, 3), function (x) { return gfmt(x, 3) + " FLOPs"; });
      return {html: html, numbers: n};
    },
    step_memory: function (v, D) {
      var d = v.width, L = v.depth, b = v.batch, e = D.step_bytes[v.dtype];
      positiveInt("depth", L);
      var p = d * d * L + d, k = D.state_tensors[v.optimizer];
      var parts = {parameters: p * e, gradients: p * e, optimizer_state: k * p * e,
                   activations: (b * d * L + b) * e, batch: (b * d + b) * e};
      var total = 0; Object.keys(parts).forEach(function (key) { total += parts[key]; });
      // lectorch.step_memory.step_timeline (first_step=False)
      var state = k * p, inputs = b * d + b, resting = p + inputs + state, acts = b * d * L;
      var events = [["start", resting], ["end of forward", resting + acts], ["backward: head", resting + acts + d + b * d]];
      for (var j = L; j >= 1; j--) {
        var live = (j - 1) * b * d + d + (L - j + 1) * d * d + b * d + (j > 1 ? b * d : 0);
        events.push(["backward: layer " + j, resting + live]);
      }
      events.push(["after backward", resting + p]);
      events.push(["optimizer step", resting + p + D.step_temporaries[v.optimizer] * d * d]);
      events.push(["after zero_grad", resting]);
      var peak = events[0];
      events.forEach(function (ev) { if (ev[1] > peak[1]) peak = ev; });
      var n = Object.assign({}, parts, {total: total, peak: peak[1] * e});
      var rows = Object.keys(parts).map(function (key) {
        return "<tr><td>" + key.replace(/_/g, " ") + "</td><td>" + formatBytes(parts[key]) + "</td></tr>";
      }).join("");
      var html = "<table>" + rows + "<tr><td><b>all at once</b></td><td><b>" + formatBytes(total) + "</b></td></tr>" +
        "<tr><td>predicted peak (" + peak[0] + ")</td><td>" + formatBytes(peak[1] * e) + "</td></tr></table>" +
        "<p class='lp-aside'>The notebook also measures the peak when the step is small enough.</p>" +
        bars(Object.keys(parts).map(function (key) { return [key.replace(/_/g, " "), parts[key]]; }),
             function (x) { return formatBytes(x, false); });
      return {html: html, numbers: n};
    },
    einsum: function (v, D) {
      var pattern = v.pattern;
      if ((pattern.match(/->/g) || []).length !== 1) fail("pattern must contain '->' exactly once, between the operands and the output");
      if (pattern.indexOf("...") >= 0) fail("patterns with '...' are analysed in the notebook (run it to explore them)");
      if (/[()]/.test(pattern)) fail("einsum cannot split or merge dimensions with parentheses; use einops.rearrange first");
      var sides = pattern.split("->");
      if (sides[1].indexOf(",") >= 0) fail("pattern has a ',' after '->': einsum has exactly one output");
      var name = /^[A-Za-z_][A-Za-z0-9_]*$/;
      function group(t) {
        var g = t.split(/\s+/).filter(Boolean);
        g.forEach(function (d) { if (!name.test(d)) fail("pattern has an invalid dimension name '" + d + "'"); });
        return g;
      }
      var inputs = sides[0].split(",").map(group), output = group(sides[1]);
      inputs.forEach(function (g, i) { if (!g.length) fail("pattern has an empty operand " + (i + 1)); });
      var seen = {}, order = [];
      inputs.forEach(function (g) { g.forEach(function (d) { if (!(d in seen)) { seen[d] = 1; order.push(d); } }); });
      var outSeen = {};
      output.forEach(function (d) {
        if (d in outSeen) fail("pattern repeats dimension '" + d + "' in the output");
        outSeen[d] = 1;
        if (!(d in seen)) fail("pattern's output uses dimension '" + d + "', which appears in no operand");
      });
      var sizes = {};
      v.sizes.replace(/,/g, " ").split(/\s+/).filter(Boolean).forEach(function (item) {
        var at = item.indexOf("=");
        if (at <= 0) fail("sizes: cannot read '" + item + "'; write name=size, e.g. 'b=2 s=128'");
        var k = item.slice(0, at), val = item.slice(at + 1);
        if (k in sizes) fail("sizes gives dimension '" + k + "' twice");
        if (!/^-?\d+$/.test(val)) fail("sizes: '" + val + "' for '" + k + "' is not a whole number");
        if (!(k in seen)) fail("sizes names dimension '" + k + "', which is not in the pattern");
        sizes[k] = positiveInt("sizes['" + k + "']", Number(val));
      });
      order.forEach(function (d) { if (!(d in sizes)) fail("sizes has no size for dimension '" + d + "'"); });
      var P = 1; order.forEach(function (d) { P *= sizes[d]; });
      var contracted = order.filter(function (d) { return !(d in outSeen); });
      var batch = output.filter(function (d) { return inputs.every(function (g) { return g.indexOf(d) >= 0; }); });
      var free = output.filter(function (d) { return batch.indexOf(d) < 0; });
      var flops = (inputs.length - 1) * P + (contracted.length ? P : 0);
      var shape = output.map(function (d) { return sizes[d]; });
      var n = {flops: flops, output_rank: shape.length};
      shape.forEach(function (s, i) { n["out" + i] = s; });
      function dims(list) { return list.length ? list.map(function (d) { return "<b>" + esc(d) + "</b>=" + sizes[d]; }).join(", ") : "none"; }
      var mult = inputs.length - 1 + (contracted.length ? 1 : 0);
      var factors = output.concat(contracted).map(function (d) { return sizes[d]; });
      var formula = mult === 0 ? "0 (nothing is multiplied or summed: a pure rearrangement)" :
        mult + " × " + (factors.join("·") || "1") + " = " + commas(flops);
      var pyShape = "(" + shape.join(", ") + (shape.length === 1 ? ",)" : ")");
      var html = table([["output shape", pyShape], ["batch dims (kept, in every operand)", dims(batch)],
                        ["free dims (kept)", dims(free)], ["contracted dims (summed)", dims(contracted)],
                        ["FLOPs", esc(formula)]]);
      return {html: html, numbers: n};
    }
  };

  function rooflineSvg(title, peak, bw, I, att, label) {
    var W = 560, H = 300, L = 64, R = 16, T = 28, B = 44;
    var ridge = peak / bw, lo = Math.min(I, ridge) / 30, hi = Math.max(I, ridge) * 30;
    var ylo = lo * bw, yhi = peak * 3;
    function x(v) { return L + (W - L - R) * (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)); }
    function y(v) { return H - B - (H - T - B) * (Math.log10(v) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo)); }
    var line = "M" + x(lo) + "," + y(lo * bw) + " L" + x(ridge) + "," + y(peak) + " L" + x(hi) + "," + y(peak);
    return '<svg class="lp-roofline" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="roofline of ' + esc(title) +
      ': the matmul ' + esc(label) + " at intensity " + gfmt(I, 3) + ' FLOPs/byte">' +
      '<text x="' + W / 2 + '" y="16" text-anchor="middle" font-size="13">' + esc(title) + "</text>" +
      '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '" stroke="#888"/>' +
      '<line x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '" stroke="#888"/>' +
      '<path d="' + line + '" fill="none" stroke="#1f77b4" stroke-width="2.5"/>' +
      '<line x1="' + x(ridge) + '" y1="' + y(peak) + '" x2="' + x(ridge) + '" y2="' + (H - B) + '" stroke="#999" stroke-dasharray="4 3"/>' +
      '<circle cx="' + x(I) + '" cy="' + y(att) + '" r="6" fill="black"/>' +
      '<text x="' + Math.min(x(I) + 8, W - R - 120) + '" y="' + (y(att) + 18) + '" font-size="12">' + esc(label) + "</text>" +
      '<text x="' + (L + W - R) / 2 + '" y="' + (H - 10) + '" text-anchor="middle" font-size="12">arithmetic intensity (FLOPs/byte, log scale)</text>' +
      '<text x="14" y="' + (H - B + T) / 2 + '" text-anchor="middle" font-size="12" transform="rotate(-90 14 ' + (H - B + T) / 2 + ')">FLOP/s (log)</text>' +
      '<text x="' + (x(ridge) + 4) + '" y="' + (H - B - 6) + '" font-size="12">ridge ' + gfmt(ridge, 3) + "</text>" +
      '<text x="' + (W - R) + '" y="' + (y(peak) - 6) + '" text-anchor="end" font-size="12">peak ' + formatFlops(peak, true) + "</text>" +
      "</svg>";
  }

  // ---- wiring ------------------------------------------------------------------------------
  function controlValue(el, spec) {
    if (spec.kind === "selection-slider" || spec.kind === "select") return spec.values[Number(el.value)];
    if (spec.kind === "log-slider") return Number(Math.pow(spec.base, Number(el.value)).toPrecision(12));
    if (spec.kind === "int-slider" || spec.kind === "number") return Number(el.value);
    if (spec.kind === "float-slider") return Number(Number(el.value).toFixed(10));
    if (spec.kind === "checkbox") return el.checked;
    return el.value;
  }
  function readout(spec, value) {
    if (spec.kind === "selection-slider") return spec.labels[spec.values.indexOf(value)];
    if (spec.kind === "log-slider") return gfmt(value, 3);
    if (spec.kind === "float-slider") return gfmt(value, 3);
    if (spec.kind === "int-slider") return commas(value);
    return "";
  }
  function values(panel) {
    var out = {};
    panel.lectorchSpecs.forEach(function (spec) {
      var el = panel.querySelector('[data-control="' + spec.name + '"]');
      out[spec.name] = controlValue(el, spec);
      var ro = panel.querySelector('[data-readout="' + spec.name + '"]');
      if (ro && ro.tagName === "INPUT") { if (document.activeElement !== ro) ro.value = out[spec.name]; }
      else if (ro) ro.textContent = readout(spec, out[spec.name]);
    });
    return out;
  }
  function update(panel) {
    var result = panel.querySelector(".lp-result"), v = values(panel);
    result.setAttribute("data-values", JSON.stringify(v));
    try {
      var out = LIVE[panel.getAttribute("data-live")](v, window.LECTORCH_LIVE_DATA);
      result.innerHTML = out.html;
      result.setAttribute("data-numbers", JSON.stringify(out.numbers));
      result.removeAttribute("data-error");
    } catch (err) {
      if (!err.lectorchInput) console.error(err);
      result.innerHTML = '<span class="lp-error">⚠ ' + esc(err.message) + "</span>";
      result.setAttribute("data-numbers", "null");
      result.setAttribute("data-error", err.message);
    }
  }
  function init() {
    document.querySelectorAll(".lectorch-panel[data-live]").forEach(function (panel) {
      if (!LIVE[panel.getAttribute("data-live")] || !window.LECTORCH_LIVE_DATA) return;
      panel.lectorchSpecs = JSON.parse(panel.getAttribute("data-controls"));
      panel.querySelectorAll("[data-control]").forEach(function (el) {
        el.disabled = false;
        el.addEventListener(el.type === "text" ? "change" : "input", function () { update(panel); });
        if (el.type === "text") el.addEventListener("keyup", function (ev) { if (ev.key === "Enter") update(panel); });
      });
      // the number box of a wide slider sets the slider (which clamps it to its range and step)
      panel.querySelectorAll("input[data-readout]").forEach(function (box) {
        var slider = panel.querySelector('[data-control="' + box.getAttribute("data-readout") + '"]');
        box.disabled = false;
        box.addEventListener("change", function () { slider.value = box.value; box.value = slider.value; update(panel); });
      });
      panel.classList.add("lp-ready");
      update(panel);
    });
  }
  window.lectorchLive = {LIVE: LIVE, update: update, gfmt: gfmt};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();

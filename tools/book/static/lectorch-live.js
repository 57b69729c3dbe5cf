/* lectorch live panels: recompute the arithmetic panels of the static book in the page.
 *
 * Every number comes from window.LECTORCH_LIVE_DATA, which the book build writes from
 * lectorch.widgets.live.export_data() (the GPU spec table, bytes per element, link speeds,
 * optimizer state counts). The formulas below are the few products and sums of
 * lectorch.widgets.live.LIVE re-expressed in JavaScript; tests/test_browser.py sets random controls
 * in the page and compares the numbers each panel publishes (data-numbers on its result) with
 * lectorch's in Python. Measured panels (data-recorded) carry the grid of results recorded when the
 * notebook ran (lectorch.widgets.Recording, in a <script class="lp-recording"> of the panel): their
 * controls offer the recorded settings and RECORDED below draws the recorded numbers. Panels with
 * neither are snapshots: their controls are disabled.
 */
(function () {
  "use strict";

  // ---- the page's language: tr(message, values) looks the message up in
  // window.LECTORCH_LIVE_UI, which the Chinese build writes from _ui.po (tools/book/sphinx_lectorch_i18n.py
  // extracts the literal message of every tr call in this file into that catalog); English pages have none
  function tr(msg, args) {
    var ui = window.LECTORCH_LIVE_UI || {}, s = Object.prototype.hasOwnProperty.call(ui, msg) ? ui[msg] : msg;
    return args ? s.replace(/\{(\w+)\}/g, function (m, k) { return k in args ? String(args[k]) : m; }) : s;
  }

  // ---- formatting, as lectorch prints ------------------------------------------------------
  function sigDigits(x, digits) {       // x's first `digits` significant digits and its exponent, ties to even as Python
    var parts = x.toExponential(digits - 1).split("e"), exp = Number(parts[1]);
    var full = Math.abs(x).toExponential(100).split("e"), all = full[0].replace(".", "");
    // an exact tie (the dropped digits are 5000…, x's full expansion) with an even last digit: round down
    if (/^50*$/.test(all.slice(digits)) && Number(all[digits - 1]) % 2 === 0) return {digits: all.slice(0, digits), exp: Number(full[1])};
    return {digits: parts[0].replace("-", "").replace(".", ""), exp: exp};
  }
  function gfmt(x, digits) {            // Python's f"{x:.{digits}g}"
    if (x === 0) return "0";
    if (!isFinite(x)) return String(x);
    var d = sigDigits(x, digits), sign = x < 0 ? "-" : "", e = d.exp, s;
    if (e < -4 || e >= digits) {
      var m = d.digits.length > 1 ? (d.digits[0] + "." + d.digits.slice(1)).replace(/0+$/, "").replace(/\.$/, "") : d.digits;
      s = m + "e" + (e < 0 ? "-" : "+") + (Math.abs(e) < 10 ? "0" : "") + Math.abs(e);
    } else if (e < 0) {
      s = ("0." + new Array(-e).join("0") + d.digits).replace(/0+$/, "").replace(/\.$/, "");
    } else {
      var int = d.digits.slice(0, e + 1), frac = d.digits.slice(e + 1);
      while (int.length < e + 1) int += "0";
      s = frac.replace(/0+$/, "") ? int + "." + frac.replace(/0+$/, "") : int;
    }
    return sign + s;
  }
  function commas(x, decimals) {
    return Number(x).toLocaleString("en-US", {minimumFractionDigits: decimals || 0,
                                              maximumFractionDigits: decimals || 0});
  }
  function amount(x) {                 // lectorch.widgets.amount: 3 significant digits, whole from 100 up
    return Math.abs(x) >= 100 ? commas(x) : gfmt(x, 3);
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
    if (!(Number.isInteger(v) && v >= 1)) fail(tr("{name} must be a whole number >= 1, got {value}", {name: name, value: v}));
    return v;
  }

  // ---- the live computations (lectorch.widgets.live.LIVE) -----------------------------------
  var LIVE = {
    napkin: function (v, D) {
      var gpu = D.gpus[v.gpu], peak = gpu.dense[v.dtype];
      if (peak === undefined) fail(tr("{gpu} has no dense {dtype} peak on its datasheet", {gpu: gpu.name, dtype: v.dtype}));
      var flops = D.napkin.flops_per_param_token * v.params * v.tokens;
      var perS = v.num_gpus * peak * v.mfu;
      var days = flops / (perS * D.napkin.seconds_per_day);
      var perParam = D.napkin.setups[v.setup];
      var n = {training_flops: flops, cluster_flops_per_s: perS, days: days, gpu_hours: days * 24 * v.num_gpus,
               memory_needed_bytes: v.params * perParam, memory_available_bytes: gpu.napkin_memory_bytes * v.num_gpus,
               max_params: v.num_gpus * gpu.napkin_memory_bytes / perParam,
               memory_per_gpu_bytes: gpu.napkin_memory_bytes, max_params_replicated: gpu.napkin_memory_bytes / perParam};
      function fit(ok) { return ok ? tr("fits") : tr("does <b>not</b> fit"); }
      function memory(available) {
        return tr("{needed} — {fits} in {available}", {needed: formatBytes(n.memory_needed_bytes, false),
          fits: fit(n.memory_needed_bytes <= available), available: formatBytes(available, false)});
      }
      var html = table([
        [tr("training FLOPs (6·N·T)"), gfmt(flops, 3)],
        [tr("useful cluster FLOP/s"), gfmt(perS, 3)],
        [tr("training time"), tr("<b>{days} days</b> ({hours} GPU-hours)", {days: amount(days), hours: amount(n.gpu_hours)})],
        [tr("weights + gradients + optimizer state, fully sharded (ZeRO-3/FSDP)"), memory(n.memory_available_bytes)],
        [tr("the same, a full copy on every GPU (plain data parallelism)"), memory(n.memory_per_gpu_bytes)],
        [tr("largest model, fully sharded"), tr("{n} parameters (activations not counted)", {n: siCount(n.max_params)})],
        [tr("largest model, a full copy on every GPU"),
         tr("{n} parameters (activations not counted)", {n: siCount(n.max_params_replicated)})]]);
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
      var head = "<div>" + tr("{rows} × {cols} = {elements} elements × {size} bytes ({dtype}) = <b>{total}</b>",
                              {rows: commas(v.rows), cols: commas(v.cols), elements: commas(el), size: D.float_bytes[v.dtype],
                               dtype: v.dtype, total: formatBytes(n.bytes)}) + "</div>";
      return {html: head + "<table><tr><th>dtype</th><th>" + tr("bytes") + "</th><th></th></tr>" + lines.join("") + "</table>",
              numbers: n};
    },
    transfer: function (v, D) {
      var nbytes = v.elements * D.transfer_bytes[v.dtype], n = {bytes: nbytes};
      var rows = [[tr("bytes moved"), "<b>" + commas(nbytes) + " B = " + formatBytes(nbytes) + "</b>"]];
      Object.keys(D.links).forEach(function (link) {
        var t = nbytes / D.links[link]; n["seconds " + link] = t;
        rows.push([tr("napkin: {link} at its peak", {link: esc(link)}), "<b>" + formatSeconds(t) + "</b>"]);
      });
      rows.push([tr("measured copy"), "<i>" + tr("run the notebook to measure your machine") + "</i>"]);
      return {html: table(rows), numbers: n};
    },
    roofline: function (v, D) {
      var gpu = D.gpus[v.gpu], peak = gpu.dense[v.dtype], bw = gpu.bandwidth_bytes_per_s;
      if (peak === undefined) fail(tr("{gpu} has no dense {dtype} peak on its datasheet", {gpu: gpu.name, dtype: v.dtype}));
      var flops = 2 * v.m * v.k * v.n, bytes = (v.m * v.k + v.k * v.n + v.m * v.n) * D.matmul_bytes[v.dtype];
      var I = flops / bytes, ridge = peak / bw, att = Math.min(peak, I * bw), bound = I >= ridge ? "compute" : "memory";
      var n = {flops: flops, bytes: bytes, intensity: I, ridge_point: ridge, attainable: att, mfu_max: att / peak,
               compute_bound: bound === "compute" ? 1 : 0};
      var verdict = {flops: formatFlops(att, true), mfu: (att / peak).toFixed(3)};
      var html = table([
        [tr("matmul"), "(" + commas(v.m) + ", " + commas(v.k) + ") @ (" + commas(v.k) + ", " + commas(v.n) + ")" +
          tr(" in {dtype}: {flops} FLOPs, {bytes} moved", {dtype: v.dtype, flops: gfmt(flops, 3), bytes: formatBytes(bytes, false)})],
        [tr("arithmetic intensity"), tr("{intensity} FLOPs/byte", {intensity: commas(I, 1)})],
        [tr("ridge point"), tr("{ridge} FLOPs/byte = {peak} TFLOP/s ÷ {bandwidth} TB/s",
                               {ridge: commas(ridge, 1), peak: gfmt(peak / 1e12, 6), bandwidth: gfmt(bw / 1e12, 6)})],
        [tr("verdict"), (bound === "compute" ? tr("<b>compute-bound</b>: at most {flops}, i.e. an MFU of at most {mfu}", verdict) :
          tr("<b>memory-bound</b>: at most {flops}, i.e. an MFU of at most {mfu}", verdict))]]);
      return {html: html + rooflineSvg(tr("{gpu}, {dtype} (datasheet)", {gpu: gpu.name, dtype: v.dtype}), peak, bw, I, att,
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
      var rows = [[tr("forward"), fwd], [tr("backward: weight grads"), bw], [tr("backward: input grads"), bi],
                  [tr("backward"), bw + bi], [tr("total"), n.total]];
      var shape = {depth: v.depth, dim: v.dim, out: v.out_dim, params: commas(params), batch: v.batch};
      var html = "<p>" + (v.depth > 1 ? tr("{depth} layers, widths {dim} → … → {out}, {params} parameters, batch {batch}", shape)
                                      : tr("{depth} layer, widths {dim} → … → {out}, {params} parameters, batch {batch}", shape)) +
        "</p><table><tr><th></th><th>" + tr("predicted") + "</th></tr>" +
        rows.map(function (r) { return "<tr><td>" + r[0] + "</td><td style='text-align:right'>" + commas(r[1]) + "</td></tr>"; }).join("") +
        "</table><p>" + tr("backward / forward = <b>{ratio}</b>; total / (6 × batch × parameters) = <b>{share}</b>",
                           {ratio: n.ratio.toFixed(2), share: (n.total / (6 * v.batch * params)).toFixed(3)}) + "</p>" +
        "<p class='lp-aside'>" + tr("The notebook also counts them with FlopCounterMode.") + "</p>" +
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
      var events = [[tr("start"), resting], [tr("end of forward"), resting + acts], [tr("backward: head"), resting + acts + d + b * d]];
      for (var j = L; j >= 1; j--) {
        var live = (j - 1) * b * d + d + (L - j + 1) * d * d + b * d + (j > 1 ? b * d : 0);
        events.push([tr("backward: layer {j}", {j: j}), resting + live]);
      }
      events.push([tr("after backward"), resting + p]);
      events.push([tr("optimizer step"), resting + p + D.step_temporaries[v.optimizer] * d * d]);
      events.push([tr("after zero_grad"), resting]);
      var peak = events[0];
      events.forEach(function (ev) { if (ev[1] > peak[1]) peak = ev; });
      var n = Object.assign({}, parts, {total: total, peak: peak[1] * e});
      var partNames = {parameters: tr("parameters"), gradients: tr("gradients"), optimizer_state: tr("optimizer state"),
                       activations: tr("activations"), batch: tr("batch")};
      var rows = Object.keys(parts).map(function (key) {
        return "<tr><td>" + partNames[key] + "</td><td>" + formatBytes(parts[key]) + "</td></tr>";
      }).join("");
      var html = "<table>" + rows + "<tr><td><b>" + tr("all at once") + "</b></td><td><b>" + formatBytes(total) + "</b></td></tr>" +
        "<tr><td>" + tr("predicted peak ({event})", {event: peak[0]}) + "</td><td>" + formatBytes(peak[1] * e) + "</td></tr></table>" +
        "<p class='lp-aside'>" + tr("The notebook also measures the peak when the step is small enough.") + "</p>" +
        bars(Object.keys(parts).map(function (key) { return [partNames[key], parts[key]]; }),
             function (x) { return formatBytes(x, false); });
      return {html: html, numbers: n};
    },
    einsum: function (v, D) {           // lectorch.contractions.analyze with sizes (no shapes)
      var pattern = v.pattern, ELL = "...";
      if ((pattern.match(/->/g) || []).length !== 1) fail(tr("pattern must contain '->' exactly once, between the operands and the output"));
      var sides = pattern.split("->");
      var name = /^[A-Za-z_][A-Za-z0-9_]*$/;
      function group(t, where) {
        if (/[()]/.test(t)) fail(tr("pattern groups dimensions with parentheses in {where}: einsum cannot split or merge dimensions; use einops.rearrange first", {where: where}));
        var g = t.split(/\s+/).filter(Boolean);
        g.forEach(function (d) { if (d !== ELL && !name.test(d)) fail(tr("pattern has an invalid dimension name '{name}' in {where}", {name: d, where: where})); });
        if (g.filter(function (d) { return d === ELL; }).length > 1) fail(tr("pattern uses '...' more than once in {where}", {where: where}));
        return g;
      }
      var inputs = sides[0].split(",").map(function (t, i) { return group(t, tr("operand {i}", {i: i + 1})); });
      inputs.forEach(function (g, i) { if (!g.length) fail(tr("pattern has an empty operand {i}: name its dimensions, e.g. 'b s h'", {i: i + 1})); });
      if (sides[1].indexOf(",") >= 0) fail(tr("pattern has a ',' after '->': einsum has exactly one output"));
      var output = group(sides[1], tr("the output"));
      var seen = {}, order = [];
      inputs.forEach(function (g) { g.forEach(function (d) { if (!(d in seen)) { seen[d] = 1; order.push(d); } }); });
      var outSeen = {};
      output.forEach(function (d) {
        if (d in outSeen) fail(tr("pattern repeats dimension '{name}' in the output; name each output dimension once", {name: d}));
        outSeen[d] = 1;
      });
      output.forEach(function (d) {
        if (!(d in seen)) {
          var compact = (order.concat(output).some(function (x) { return x.length > 1; }) &&
                         inputs.every(function (g) { return g.length === 1; }));
          fail((d === ELL ? tr("pattern's output uses '...', which appears in no operand")
                          : tr("pattern's output uses dimension '{name}', which appears in no operand", {name: d})) +
               (compact ? tr(" (einops patterns separate dimensions by spaces: write 'b s h', not 'bsh')") : ""));
        }
      });
      var sizes = {}, ell = null;
      v.sizes.replace(/,/g, " ").split(/\s+/).filter(Boolean).forEach(function (item) {
        var at = item.indexOf("=");
        if (at <= 0) fail(tr("sizes: cannot read '{item}'; write name=size, e.g. 'b=2 s=128'", {item: item}));
        var k = item.slice(0, at), val = item.slice(at + 1);
        if (k in sizes || (k === ELL && ell)) fail(tr("sizes gives dimension '{name}' twice", {name: k}));
        if (!val) fail(tr("sizes: '{item}' has no size after '='", {item: item}));
        var parts = val.split("x");
        parts.forEach(function (x) { if (!/^[-+]?\d+$/.test(x)) fail(tr("sizes: '{value}' for '{name}' is not a whole number", {value: val, name: k})); });
        if (k === ELL) {
          if (!(ELL in seen)) fail(tr("sizes names dimension '...', which is not in the pattern"));
          ell = parts.map(function (x) { return positiveInt("sizes['...']", Number(x)); });
          return;
        }
        if (parts.length !== 1) fail(tr("sizes: only '...' takes several sizes (like ...=2x3), got '{item}'", {item: item}));
        if (!(k in seen)) fail(tr("sizes names dimension '{name}', which is not in the pattern", {name: k}));
        sizes[k] = positiveInt("sizes['" + k + "']", Number(parts[0]));
      });
      order.forEach(function (d) { if (d !== ELL && !(d in sizes)) fail(tr("sizes has no size for dimension '{name}'", {name: d})); });
      if ((ELL in seen) && !ell) fail(tr("sizes has no shape for '...': write e.g. ...=2x3"));
      function shapeOf(d) { return d === ELL ? ell : [sizes[d]]; }
      function size(d) { return shapeOf(d).reduce(function (a, b) { return a * b; }, 1); }
      function factors(list) { return list.map(function (d) { return shapeOf(d).join("·"); }).filter(Boolean).join("·") || "1"; }
      var contracted = order.filter(function (d) { return !(d in outSeen); });
      var batch = output.filter(function (d) { return inputs.every(function (g) { return g.indexOf(d) >= 0; }); });
      var free = output.filter(function (d) { return batch.indexOf(d) < 0; });
      // pairwise, left to right (lectorch.contractions.Contraction.steps)
      var flops = 0, terms = [], kept = inputs[0].filter(function (d, i, g) { return g.indexOf(d) === i; });
      for (var i = 1; i < inputs.length; i++) {
        var later = {};
        output.forEach(function (d) { later[d] = 1; });
        inputs.slice(i + 1).forEach(function (g) { g.forEach(function (d) { later[d] = 1; }); });
        var dims = kept.slice();
        inputs[i].forEach(function (d) { if (dims.indexOf(d) < 0) dims.push(d); });
        var summed = dims.filter(function (d) { return !(d in later); });
        var mult = summed.length ? 2 : 1;
        flops += mult * dims.reduce(function (a, d) { return a * size(d); }, 1);
        terms.push(mult + " × " + factors(dims));
        kept = dims.filter(function (d) { return d in later; });
      }
      if (inputs.length === 1) flops = contracted.length ? order.reduce(function (a, d) { return a * size(d); }, 1) : 0;
      var shape = [];
      output.forEach(function (d) { shape = shape.concat(shapeOf(d)); });
      var n = {flops: flops, output_rank: shape.length};
      shape.forEach(function (s, i) { n["out" + i] = s; });
      function dimsHtml(list) {
        return list.length ? list.map(function (d) {
          return "<b>" + esc(d) + "</b>=" + (d === ELL ? (ell.join("×") || "()") : sizes[d]); }).join(", ") : tr("none");
      }
      var formula;
      if (inputs.length > 2) formula = tr("pairwise: {terms} = {flops}", {terms: terms.join(" + "), flops: commas(flops)});
      else {
        var mult2 = inputs.length - 1 + (contracted.length ? 1 : 0);
        formula = mult2 === 0 ? tr("0 (nothing is multiplied or summed: a pure rearrangement)") :
          mult2 + " × " + factors(output.concat(contracted)) + " = " + commas(flops);
      }
      var pyShape = "(" + shape.join(", ") + (shape.length === 1 ? ",)" : ")");
      var html = table([[tr("output shape"), pyShape], [tr("batch dims (kept, in every operand)"), dimsHtml(batch)],
                        [tr("free dims (kept)"), dimsHtml(free)], [tr("contracted dims (summed)"), dimsHtml(contracted)],
                        ["FLOPs", esc(formula) + " (" + formatFlops(flops) + ")"]]);
      return {html: html, numbers: n};
    }
  };

  // ---- views of x = torch.arange(numel).view(shape) (lectorch.widgets.views.view_result) ---------
  function pyInt(text, what) {          // Python's int(text) for decimal text
    var t = text.trim();
    if (!/^[+-]?\d+(_\d+)*$/.test(t)) throw what;
    return Number(t.replace(/_/g, ""));
  }
  function pyStripChars(text, chars) {  // Python's text.strip(chars)
    var a = 0, b = text.length;
    while (a < b && chars.indexOf(text[a]) >= 0) a++;
    while (b > a && chars.indexOf(text[b - 1]) >= 0) b--;
    return text.slice(a, b);
  }
  function pyQuote(text) { return text.indexOf("'") >= 0 && text.indexOf('"') < 0 ? '"' + text + '"' : "'" + text.replace(/'/g, "\\'") + "'"; }
  function pyTuple(items) { return "(" + items.join(", ") + (items.length === 1 ? ",)" : ")"); }
  function parseInts(text, name) {      // lectorch.widgets.views.parse_ints
    var body = pyStripChars(text.trim(), "()[]").trim();
    if (!body) return [];
    return body.split(",").filter(function (p) { return p.trim(); }).map(function (p) {
      try { return pyInt(p, 1); } catch (e) { fail(tr("{name} must be ints separated by commas, such as '4, 4'; got {text}", {name: name, text: pyQuote(text)})); }
    });
  }
  function parseIndex(text) {           // lectorch.widgets.views.parse_index: ints, slices, "..."
    var body = pyStripChars(text.trim(), "[]").trim();
    if (!body) return [];
    return body.split(",").map(function (part) {
      part = part.trim();
      try {
        if (part === "...") return {ellipsis: true};
        if (part.indexOf(":") >= 0) {
          var b = part.split(":");
          if (b.length > 3) throw 1;
          var s = b.map(function (x) { return x.trim() ? pyInt(x, 1) : null; });
          return {slice: true, start: s[0], stop: s.length > 1 ? s[1] : null, step: s.length > 2 ? s[2] : null};
        }
        return pyInt(part, 1);
      } catch (e) { fail(tr("index: cannot read {part}; write ints, slices like 1:3 or ::2, or ...", {part: pyQuote(part)})); }
    });
  }
  function contiguousStrides(shape) {   // lectorch.views.contiguous_strides
    var out = [], step = 1;
    for (var d = shape.length - 1; d >= 0; d--) { out.unshift(step); step *= Math.max(shape[d], 1); }
    return out;
  }
  function prod(a) { return a.reduce(function (x, y) { return x * y; }, 1); }
  function isContiguous(L) {            // lectorch.views.Layout.is_contiguous (torch's rule)
    if (prod(L.shape) === 0) return true;
    var expected = 1;
    for (var d = L.shape.length - 1; d >= 0; d--) {
      if (L.shape[d] !== 1) { if (L.strides[d] !== expected) return false; expected *= L.shape[d]; }
    }
    return true;
  }
  function cellsOf(L) {                 // lectorch.views.Layout.cells: storage index of every element, row-major
    var cells = [L.offset];
    L.shape.forEach(function (size, d) {
      var next = [];
      cells.forEach(function (c) { for (var i = 0; i < size; i++) next.push(c + i * L.strides[d]); });
      cells = next;
    });
    return cells;
  }
  function normDim(dim, ndim, name) {
    if (!(-ndim <= dim && dim < ndim)) fail(tr("{name}={dim} is out of range for a layout with {ndim} dims", {name: name, dim: dim, ndim: ndim}));
    return ((dim % ndim) + ndim) % ndim;
  }
  function permute(L, dims) {           // lectorch.views.Layout.permute
    var order = dims.map(function (d) { return normDim(d, L.shape.length, "dims"); });
    var sorted = order.slice().sort(function (a, b) { return a - b; });
    if (sorted.length !== L.shape.length || sorted.some(function (d, i) { return d !== i; }))
      fail(tr("dims {dims} must be a permutation of 0..{last}, each dim exactly once", {dims: pyTuple(dims), last: L.shape.length - 1}));
    return {shape: order.map(function (d) { return L.shape[d]; }), strides: order.map(function (d) { return L.strides[d]; }),
            offset: L.offset};
  }
  function sliceIndices(e, size) {      // Python's slice(start, stop, step).indices(size), step > 0
    function clamp(v, dflt) {
      if (v === null) return dflt;
      if (v < 0) v += size;
      return Math.min(Math.max(v, 0), size);
    }
    var step = e.step === null ? 1 : e.step, start = clamp(e.start, 0), stop = clamp(e.stop, size);
    return {start: start, step: step, length: Math.max(0, Math.ceil((stop - start) / step))};
  }
  function index(L, entries) {          // lectorch.views.Layout.__getitem__
    var ell = entries.filter(function (e) { return e && e.ellipsis; }).length, ndim = L.shape.length;
    if (ell > 1) fail(tr("index may contain at most one '...'"));
    var real = entries.length - ell;
    if (real > ndim) fail(tr("index has {real} entries but the layout has only {ndim} dims", {real: real, ndim: ndim}));
    var full = [];
    entries.forEach(function (e) {
      if (e && e.ellipsis) for (var k = 0; k < ndim - real; k++) full.push({slice: true, start: null, stop: null, step: null});
      else full.push(e);
    });
    while (full.length < ndim) full.push({slice: true, start: null, stop: null, step: null});
    var shape = [], strides = [], offset = L.offset;
    full.forEach(function (e, d) {
      var size = L.shape[d], stride = L.strides[d];
      if (typeof e === "object") {
        if (e.step !== null && e.step <= 0) fail(tr("slice step must be positive (torch has no negative strides), got {step}", {step: e.step}));
        var s = sliceIndices(e, size);
        shape.push(s.length); strides.push(stride * s.step); offset += s.start * stride;
      } else {
        if (!(-size <= e && e < size)) fail(tr("index {index} is out of range for dim {dim} of size {size}", {index: e, dim: d, size: size}));
        offset += (((e % size) + size) % size) * stride;
      }
    });
    return {shape: shape, strides: strides, offset: offset};
  }
  function flatStrides(L) {             // torch's computeStride for .view(-1): the one stride, or null (must copy)
    var n = prod(L.shape), newShape = [n];
    if (!L.shape.length) return [1];
    if (n === 0) return L.shape.length === 1 ? L.strides.slice() : [1];
    var viewD = 0, newStride = [0], chunk = L.strides[L.shape.length - 1], tensorNumel = 1, viewNumel = 1;
    for (var d = L.shape.length - 1; d >= 0; d--) {
      tensorNumel *= L.shape[d];
      if (d === 0 || (L.shape[d - 1] !== 1 && L.strides[d - 1] !== tensorNumel * chunk)) {
        while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
          newStride[viewD] = viewNumel * chunk; viewNumel *= newShape[viewD]; viewD--;
        }
        if (viewNumel !== tensorNumel) return null;
        if (d > 0) { chunk = L.strides[d - 1]; tensorNumel = 1; viewNumel = 1; }
      }
    }
    return viewD === -1 ? newStride : null;
  }
  function elementwiseStrides(L) {      // the strides torch's TensorIterator gives `view + 0` (it keeps the layout's order)
    var nd = L.shape.length, perm = [], i;
    if (nd <= 1) return contiguousStrides(L.shape);
    for (i = nd - 1; i >= 0; i--) perm.push(i);
    function shouldSwap(a, b) {
      var s0 = L.strides[a], s1 = L.strides[b];
      if (s0 === 0 || s1 === 0) return 0;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      return L.shape[a] > L.shape[b] ? 1 : 0;
    }
    for (i = 1; i < nd; i++) {
      var d1 = i;
      for (var d0 = i - 1; d0 >= 0; d0--) {
        var c = shouldSwap(perm[d0], perm[d1]);
        if (c > 0) { var t = perm[d0]; perm[d0] = perm[d1]; perm[d1] = t; d1 = d0; } else if (c < 0) break;
      }
    }
    // the layout's own order is row-major: a plain contiguous output (torch.empty's strides, sizes 0 count as 1)
    if (perm.every(function (d, k) { return d === nd - 1 - k; })) return contiguousStrides(L.shape);
    var out = new Array(nd), next = 1;
    perm.forEach(function (d) { out[d] = next; next *= L.shape[d]; });
    return out;
  }
  function viewExpression(dims, entries, then) {  // lectorch.widgets.views._expression
    var expr = "x";
    if (dims.length) expr += dims.length > 1 ? ".permute(" + dims.join(", ") + ")" : ".permute(" + dims[0] + ")";
    if (entries.length) expr += "[" + entries.map(function (e) {
      if (e && e.ellipsis) return "...";
      if (typeof e === "object") return (e.start === null ? "" : e.start) + ":" + (e.stop === null ? "" : e.stop) +
        (e.step !== null ? ":" + e.step : "");
      return String(e);
    }).join(", ") + "]";
    if (then !== "(nothing)") expr = then === "+ 0" ? "(" + expr + ") + 0" : expr + then;
    return expr;
  }
  // The width a panel's drawing gets in the page: charts are laid out at that width, so that their
  // 11-unit text is drawn at 11 px on a phone too (an SVG scaled down to fit would shrink it).
  function drawingWidth() {
    var r = document.querySelector(".lectorch-panel .lp-result");
    return Math.max(280, Math.min(560, Math.floor(r && r.clientWidth ? r.clientWidth : 560)));
  }
  function storageSvg(L, size, title, D) {  // lectorch.plots.views.storage_view_figure: the storage row, then the view's grid
    var V = D.views, cols = L.shape.length ? L.shape[L.shape.length - 1] : 1;
    var rows = L.shape.length > 1 ? prod(L.shape.slice(0, -1)) : 1, cells = cellsOf(L), colours = {};
    var box = Math.max(15, Math.min(22, Math.floor((drawingWidth() - 2) / Math.max(size, cols, 1))));
    cells.forEach(function (c, k) { if (!(c in colours)) colours[c] = V.palette[Math.floor(k / Math.max(cols, 1)) % V.palette.length]; });
    function cell(x, y, colour, label) {
      return '<rect x="' + x + '" y="' + y + '" width="' + box + '" height="' + box + '" fill="' + colour +
        '" stroke="#555" stroke-width="0.8"/>' + (label === "" ? "" : '<text x="' + (x + box / 2) + '" y="' + (y + box / 2 + 4) +
        '" text-anchor="middle" font-size="11" fill="' + (colour === V.grey ? "#999" : "#222") + '">' + label + "</text>");
    }
    function svg(w, h, label, body) {
      return '<svg class="lp-views" viewBox="0 0 ' + w + " " + h + '" width="' + w + '" role="img" aria-label="' + esc(label) + '">' +
        body + "</svg>";
    }
    var storageTitle = tr("storage: {size} elements, in memory order", {size: size}), row = "", grid = "";
    for (var i = 0; i < size; i++) row += cell(1 + i * box, 1, colours[i] || V.grey, size <= V.max_labelled ? i : "");
    var labelled = Math.max(cols, size) <= V.max_labelled;
    cells.forEach(function (c, k) {
      var r = Math.floor(k / Math.max(cols, 1)), col = k - r * Math.max(cols, 1);
      grid += cell(1 + col * box, 1 + r * box, V.palette[r % V.palette.length], labelled ? c : "");
    });
    return '<div class="lp-views-caption">' + esc(storageTitle) + "</div>" + svg(Math.max(size, 1) * box + 2, box + 2, storageTitle, row) +
      '<div class="lp-views-caption">' + esc(title) + "</div>" + svg(Math.max(cols, 1) * box + 2, Math.max(rows, 1) * box + 2, title, grid) +
      (L.shape.length > 2 ? '<div class="lp-views-caption">' + esc(tr("(leading dims flattened into {rows} rows)", {rows: rows})) +
       "</div>" : "");
  }
  LIVE.views = function (v, D) {
    var size = parseInts(v.shape, "shape"), V = D.views;
    size.forEach(function (n) { if (n < 0) fail(tr("shape has a negative size {n} in {shape}; sizes must be >= 0", {n: n, shape: pyTuple(size)})); });
    if (!(size.length >= 1 && size.length <= 4)) fail(tr("shape must have 1 to 4 dims, got {shape}", {shape: pyTuple(size)}));
    var numel = prod(size);
    if (!(numel >= 1 && numel <= V.max_drawn)) fail(tr("shape {shape} has {numel} elements: keep it between 1 and {max} so the drawing stays readable",
                                                       {shape: pyTuple(size), numel: numel, max: V.max_drawn}));
    var order = parseInts(v.dims, "dims"), entries = parseIndex(v.index);
    if (V.then.indexOf(v.then) < 0) fail(tr("then must be one of {choices}, got {then}", {choices: V.then.join(", "), then: v.then}));
    var L = {shape: size, strides: contiguousStrides(size), offset: 0};
    if (order.length) L = permute(L, order);
    if (entries.length) L = index(L, entries);
    var expr = viewExpression(order, entries, v.then), R = L, copy = false, n = prod(L.shape);
    if (v.then === ".view(-1)" || v.then === ".reshape(-1)") {
      var flat = flatStrides(L);
      if (flat) R = {shape: [n], strides: flat, offset: L.offset};
      else if (v.then === ".view(-1)") fail(tr("{expr} raises: this view's strides {strides} cannot be merged into one dimension without copying; .reshape(-1) would copy, .view(-1) refuses",
                                               {expr: expr, strides: pyTuple(L.strides)}));
      else { R = {shape: [n], strides: [1], offset: 0}; copy = true; }
    } else if (v.then === ".contiguous()" && !isContiguous(L)) {
      R = {shape: L.shape, strides: contiguousStrides(L.shape), offset: 0}; copy = true;
    } else if (v.then === "+ 0") {
      R = {shape: L.shape, strides: elementwiseStrides(L), offset: 0}; copy = true;
    }
    var storage = copy ? n : numel, bytes = storage * V.element_bytes, cells = cellsOf(R), contiguous = isContiguous(R);
    var distinct = cells.filter(function (c, i) { return cells.indexOf(c) === i; }).length;
    var out = {ndim: R.shape.length, offset: R.offset, contiguous: contiguous ? 1 : 0, shares_storage: copy ? 0 : 1,
               storage_elements: storage, storage_bytes: bytes, cells_read: distinct, numel: n};
    R.shape.forEach(function (s, d) { out["shape" + d] = s; });
    R.strides.forEach(function (s, d) { out["stride" + d] = s; });
    cells.forEach(function (c, k) { out["cell" + k] = c; });
    var html = table([
      [tr("expression"), "<code>" + esc(expr) + "</code>"], [tr("shape"), pyTuple(R.shape)], [tr("strides"), pyTuple(R.strides)],
      [tr("offset"), R.offset], [tr("contiguous"), contiguous ? tr("yes") : tr("no")],
      [tr("shares storage with x"), copy ? esc(tr("no (a copy: {bytes} new bytes)", {bytes: bytes})) : esc(tr("yes (a view: 0 new bytes)"))],
      [tr("storage cells read"), esc(tr("{read} of {total}", {read: distinct, total: storage}))]]);
    var title = tr("{expr}: shape {shape}, strides {strides}, offset {offset} ({kind})",
                   {expr: expr, shape: pyTuple(R.shape), strides: pyTuple(R.strides), offset: R.offset,
                    kind: contiguous ? tr("contiguous") : tr("non-contiguous")});
    return {html: html + storageSvg(R, storage, title, D), numbers: out};
  };

  // ---- a small SVG chart: lines (null breaks a line), bars of a histogram, marker lines ------------
  function chartSvg(o) {
    var W = drawingWidth(), H = 280, L = 64, R = 16, T = 26, B = 44;
    var ylog = !!o.ylog, xs = [], ys = [];
    (o.series || []).forEach(function (s) { s.points.forEach(function (p) {
      if (p[1] !== null && isFinite(p[1]) && (!ylog || p[1] > 0)) { xs.push(p[0]); ys.push(p[1]); } }); });
    (o.bars || []).forEach(function (b) { xs.push(b[0], b[1]); ys.push(b[2]); });
    var x0 = o.xlim ? o.xlim[0] : Math.min.apply(null, xs), x1 = o.xlim ? o.xlim[1] : Math.max.apply(null, xs);
    var y0 = o.ylim ? o.ylim[0] : (ylog ? Math.min.apply(null, ys) : Math.min(0, Math.min.apply(null, ys)));
    var y1 = o.ylim ? o.ylim[1] : Math.max.apply(null, ys);
    if (ylog) { y0 = Math.log10(y0); y1 = Math.log10(y1); }
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    function X(v) { return L + (W - L - R) * (v - x0) / (x1 - x0); }
    function Y(v) { var u = ylog ? Math.log10(Math.max(v, Math.pow(10, y0))) : v;
                    return H - B - (H - T - B) * (Math.min(Math.max(u, y0), y1) - y0) / (y1 - y0); }
    var out = '<svg class="lp-roofline lp-chart" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="' + esc(o.title) + '">' +
      '<text x="' + W / 2 + '" y="16" text-anchor="middle" font-size="13">' + esc(o.title) + "</text>" +
      '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '" stroke="#888"/>' +
      '<line x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '" stroke="#888"/>';
    [x0, (x0 + x1) / 2, x1].forEach(function (t) {
      out += '<text x="' + X(t) + '" y="' + (H - B + 14) + '" text-anchor="middle" font-size="11">' + gfmt(t, 3) + "</text>"; });
    [y0, (y0 + y1) / 2, y1].forEach(function (t) {
      var v = ylog ? Math.pow(10, t) : t;
      out += '<text x="' + (L - 4) + '" y="' + (Y(v) + 4) + '" text-anchor="end" font-size="11">' + gfmt(v, 2) + "</text>"; });
    (o.bars || []).forEach(function (b) {
      out += '<rect x="' + X(b[0]) + '" y="' + Y(b[2]) + '" width="' + Math.max(0, X(b[1]) - X(b[0])) + '" height="' +
        Math.max(0, H - B - Y(b[2])) + '" fill="' + (o.barColor || "#1f78b4") + '" fill-opacity="0.7"/>'; });
    (o.vlines || []).forEach(function (m) {
      out += '<line x1="' + X(m.x) + '" y1="' + T + '" x2="' + X(m.x) + '" y2="' + (H - B) + '" stroke="#888" stroke-dasharray="' + (m.dash || "4 3") + '"/>'; });
    (o.hlines || []).forEach(function (m) {
      out += '<line x1="' + L + '" y1="' + Y(m.y) + '" x2="' + (W - R) + '" y2="' + Y(m.y) + '" stroke="#aaa"/>'; });
    var legend = [];
    (o.series || []).forEach(function (s) {
      var d = "", pen = false;
      s.points.forEach(function (p) {
        if (p[1] === null || !isFinite(p[1]) || (ylog && p[1] <= 0)) { pen = false; return; }
        d += (pen ? " L" : " M") + X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); pen = true; });
      out += '<path d="' + d + '" fill="none" stroke="' + s.color + '" stroke-width="2"' +
        (s.dash ? ' stroke-dasharray="' + s.dash + '"' : "") + "/>";
      if (s.label) legend.push(s);
    });
    legend.forEach(function (s, i) {
      var y = T + 14 + 16 * i;
      out += '<line x1="' + (W - R - 170) + '" y1="' + (y - 4) + '" x2="' + (W - R - 150) + '" y2="' + (y - 4) + '" stroke="' + s.color +
        '" stroke-width="2"' + (s.dash ? ' stroke-dasharray="' + s.dash + '"' : "") + "/>" +
        '<text x="' + (W - R - 145) + '" y="' + y + '" font-size="11">' + esc(s.label) + "</text>"; });
    out += '<text x="' + (L + W - R) / 2 + '" y="' + (H - 10) + '" text-anchor="middle" font-size="12">' + esc(o.xlabel) + "</text>" +
      '<text x="14" y="' + (H - B + T) / 2 + '" text-anchor="middle" font-size="12" transform="rotate(-90 14 ' + (H - B + T) / 2 + ')">' +
      esc(o.ylabel) + "</text></svg>";
    return out;
  }

  // ---- measured panels: draw the numbers recorded when the notebook ran (lectorch.widgets.Recording)
  var RECORDED = {
    matmul: function (v, n) {
      var where = n.device + (v.threads ? ", " + (v.threads !== 1 ? tr("{n} threads", {n: v.threads}) : tr("{n} thread", {n: v.threads})) : "");
      var rows = [
        [tr("matmul"), "(" + commas(v.B) + ", " + commas(v.D) + ") @ (" + commas(v.D) + ", " + commas(v.K) + ")" +
          tr(" in {dtype} on {where}", {dtype: esc(v.dtype), where: esc(where)})],
        [tr("FLOPs = 2·B·D·K"), commas(n.flops)],
        [tr("bytes moved (at least)"), tr("{bytes} → intensity {intensity} FLOPs/byte", {bytes: formatBytes(n.bytes, false), intensity: commas(n.intensity, 1)})],
        [tr("measured time"), tr("{median} median (IQR {iqr}, {trials} trials × {number})",
                                 {median: formatSeconds(n.median_s), iqr: formatSeconds(n.iqr_s), trials: n.trials, number: n.number})],
        [tr("achieved"), "<b>" + formatFlops(n.flops_per_s, true) + "</b>"]];
      if (n.peak) {
        rows.push([tr("MFU"), tr("<b>{mfu}</b> of the {gpu} dense {dtype} peak ({peak} TFLOP/s)",
                                 {mfu: n.mfu.toFixed(3), gpu: esc(n.gpu), dtype: esc(v.dtype), peak: gfmt(n.peak / 1e12, 6)})]);
        var at = {share: n.attainable_fraction.toFixed(3)};
        rows.push([tr("roofline"), n.bound === "compute" ? tr("compute-bound: at most {share} of the peak at this intensity", at)
                                                         : tr("memory-bound: at most {share} of the peak at this intensity", at)]);
      } else {
        rows.push([tr("MFU"), n.device === "cpu" ? tr("no datasheet peak for a CPU, so no MFU")
                                                 : tr("no datasheet peak for this device, so no MFU")]);
        if (n.versus_reference !== undefined)
          rows.push([tr("vs {reference}", {reference: esc(n.reference_label || tr("a reference peak"))}), n.versus_reference.toFixed(3) + tr(" (not an MFU)")]);
      }
      return table(rows);
    },
    step_cost: function (v, n) {
      var rows = [
        [tr("activations saved for backward"), formatBytes(n.saved_bytes) + tr(" ({ratio}× fp32 without checkpointing)", {ratio: n.saved_ratio.toFixed(2)})],
        [tr("FLOPs of forward + backward"), tr("{mflop} MFLOP ({per} per token)", {mflop: (n.flops / 1e6).toFixed(1), per: commas(n.flops / n.tokens)})],
        [tr("measured step time"), tr("{time} on {device}", {time: formatSeconds(n.step_seconds), device: esc(n.device)})],
        [tr("peak device memory"), n.peak_bytes === null ? tr("not tracked on {device} (run on a GPU to see it)", {device: esc(n.device.split(":")[0])})
                                                 : formatBytes(n.peak_bytes)]];
      return "<p>TinyLM V=" + n.vocab_size + ", D=" + n.dim + ", L=" + n.num_layers + ", T=" + n.context_length + ", B=" +
        v.batch_size + ": " + tr("{tokens} tokens per step", {tokens: n.tokens}) + "</p>" +
        "<table>" + rows.map(function (r) { return "<tr><td>" + r[0] + "</td><td><b>" + r[1] + "</b></td></tr>"; }).join("") + "</table>";
    },
    loss_curves: function (v, n) {
      var colors = ["#1f77b4", "#7f7f7f"], series = [], parts = [];
      Object.keys(n.curves).forEach(function (label, i) {
        var losses = n.curves[label], last = losses[losses.length - 1];
        var ok = last !== null && isFinite(last) && last < 10 * losses[0];
        parts.push(esc(label) + ": " + tr("loss") + " " + gfmt(losses[0], 3) + " → <b>" + (ok ? gfmt(last, 3) : tr("diverged")) + "</b>");
        series.push({label: label, color: colors[i % 2], dash: i ? "5 4" : "",
                     points: losses.map(function (y, s) { return [s, y]; })});
      });
      return "<p>" + tr("{steps} full-batch steps at lr = {lr}.", {steps: n.steps, lr: gfmt(n.lr, 3)}) + " " + parts.join("; ") + "</p>" +
        chartSvg({title: tr("Cruncher(16, 2) on a linear regression, lr = {lr}", {lr: gfmt(n.lr, 3)}), xlabel: tr("step"),
                  ylabel: tr("loss (log)"), ylog: true, series: series});
    },
    init: function (v, n) {
      var half = Math.max(4, 4 * n.measured_std), bars = [], normal = [], i;
      for (i = 0; i < n.density.length; i++) bars.push([n.edges[i], n.edges[i + 1], n.density[i]]);
      for (i = 0; i <= 200; i++) { var x = -half + 2 * half * i / 200; normal.push([x, Math.exp(-x * x / 2) / Math.sqrt(2 * Math.PI)]); }
      var top = Math.max(0.45, Math.max.apply(null, n.density)) * 1.05;
      return "<p>" + tr("weight std = {formula} = {std}; output std measured <b>{measured}</b>, predicted sqrt({width}) × {std} = <b>{predicted}</b>",
                        {formula: esc(n.formula), std: gfmt(n.weight_std, 4), measured: gfmt(n.measured_std, 3), width: v.width,
                         predicted: gfmt(n.predicted_std, 3)}) + "</p>" +
        chartSvg({title: tr("width {width}, {scheme} init (std {formula})", {width: v.width, scheme: v.scheme, formula: n.formula}),
                  xlabel: tr("output value"), ylabel: tr("density"), xlim: [-half, half], ylim: [0, top], bars: bars,
                  series: [{label: "N(0, 1)", color: "#000", dash: "5 4", points: normal}]});
    }
  };

  // ---- what a float format stores (lectorch.dtypes.float_bits and widgets.precision.describe_value)
  function pyRepr(x) {                  // Python's repr of a float
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    if (!isFinite(x)) return isNaN(x) ? "nan" : (x > 0 ? "inf" : "-inf");
    var parts = x.toExponential().split("e"), e = Number(parts[1]);
    if (e < -4 || e >= 16) return parts[0] + "e" + (e < 0 ? "-" : "+") + (Math.abs(e) < 10 ? "0" : "") + Math.abs(e);
    var t = String(x);
    return t.indexOf(".") >= 0 ? t : t + ".0";
  }
  function pyg(x, digits) { return isFinite(x) ? gfmt(x, digits) : (isNaN(x) ? "nan" : (x > 0 ? "inf" : "-inf")); }
  function binade(a) {                  // floor(log2(a)) for a > 0, exactly
    var e = Math.floor(Math.log2(a));
    if (Math.pow(2, e) > a) e -= 1;
    if (Math.pow(2, e + 1) <= a) e += 1;
    return e;
  }
  function castTo(x, f) {               // torch's CPU cast from float64: via float32, round to nearest even
    if (f.name === "fp64") return x;
    var v = Math.fround(x);
    if (!isFinite(v) && !f.has_inf) return x < 0 ? -f.max : f.max;
    if (f.name === "fp32" || v === 0 || !isFinite(v)) return v;
    var a = Math.abs(v), e = Math.max(binade(a), 1 - f.bias), q = Math.pow(2, e - f.mantissa_bits);
    var r = a / q, n = Math.floor(r), frac = r - n;
    if (frac > 0.5 || (frac === 0.5 && n % 2 === 1)) n += 1;
    var out = n * q;
    if (out > f.max) out = f.has_inf ? Infinity : f.max;  // E4M3FN: this torch's cast saturates
    return v < 0 ? -out : out;
  }
  function fieldsOf(v, f) {
    var sign = v < 0 || Object.is(v, -0) ? 1 : 0, a = Math.abs(v), top = Math.pow(2, f.exponent_bits) - 1;
    if (!isFinite(a)) return {sign: sign, exponent: top, mantissa: 0, kind: "inf"};
    if (a === 0) return {sign: sign, exponent: 0, mantissa: 0, kind: "zero"};
    if (a < f.smallest_normal) return {sign: sign, exponent: 0, mantissa: a / f.smallest_subnormal, kind: "subnormal"};
    var e = binade(a);
    return {sign: sign, exponent: e + f.bias, mantissa: (a / Math.pow(2, e) - 1) * Math.pow(2, f.mantissa_bits), kind: "normal"};
  }
  function ulp(v, f) { return Math.pow(2, Math.max(fieldsOf(v, f).exponent, 1) - f.bias - f.mantissa_bits); }
  function nextUp(v, f) {               // the bit pattern one up (lectorch.dtypes.next_up)
    if (v === 0) return f.smallest_subnormal;
    if (v > 0) return v + ulp(v, f);
    var b = fieldsOf(v, f), gap = (b.mantissa === 0 && b.exponent > 1) ? ulp(v, f) / 2 : ulp(v, f);
    return -(Math.abs(v) - gap);
  }
  function nextDown(v, f) { return -nextUp(-v, f); }
  LIVE.float_bits = function (v, D) {
    var value = v.value, f = D.float_formats[v.dtype];
    if (typeof value !== "number" || !isFinite(value)) fail(tr("value must be a finite number, got {value}", {value: v.value}));
    var stored = castTo(value, f), b = fieldsOf(stored, f);
    var width = [1, f.exponent_bits, f.mantissa_bits];
    var digits = [String(b.sign), b.exponent.toString(2), b.mantissa.toString(2)].map(function (d, i) {
      while (d.length < width[i]) d = "0" + d; return d; });
    var names = ["sign", "exponent", "mantissa"], fieldTitles = [tr("sign"), tr("exponent"), tr("mantissa")], boxes = "";
    digits.forEach(function (ds, i) {
      for (var j = 0; j < ds.length; j++) boxes += '<span title="' + esc(fieldTitles[i]) + '" style="display:inline-block;min-width:1.1em;' +
        "text-align:center;background:" + D.field_colors[names[i]] + ';margin:0 1px;font-family:monospace">' + ds[j] + "</span>";
    });
    var n = {sign: b.sign, exponent: b.exponent, mantissa: b.mantissa};
    n["kind_" + b.kind] = 1;
    var rows = [[tr("stored"), "<b>" + pyRepr(stored) + "</b> (" +
                ({normal: tr("normal"), subnormal: tr("subnormal"), zero: tr("zero")}[b.kind] || b.kind) + ")"], [tr("bits"), boxes]], note = "";
    if (b.kind === "normal" || b.kind === "subnormal") {
      var unbiased = b.kind === "normal" ? b.exponent - f.bias : 1 - f.bias;
      rows.push([tr("fields"), tr("sign {sign} · exponent field {exponent} → 2<sup>{power}</sup> · mantissa {mantissa}",
                                {sign: b.sign, exponent: b.exponent, power: unbiased,
                                 mantissa: (b.kind === "normal" ? "1." : "0.") + digits[2] + "<sub>2</sub>"})]);
    }
    var absErr = Math.abs(stored - value), rel = value === 0 ? 0 : (isFinite(stored) ? absErr / Math.abs(value) : Infinity);
    rows.push([tr("error"), tr("absolute {abs} · relative {rel}", {abs: pyg(absErr, 3), rel: pyg(rel, 3)})]);
    if (isFinite(stored)) { n.stored = stored; n.abs_error = absErr; n.relative_error = rel; }
    if (b.kind === "zero" && value !== 0) {
      note = tr("{value} underflows to 0 in {dtype}: it is below half the smallest subnormal, {tiny}.",
                {value: pyRepr(value), dtype: f.name, tiny: pyg(f.smallest_subnormal, 3)});
    } else if (!isFinite(stored)) {
      note = tr("{value} overflows to {stored}: {dtype} stops at ±{max}.",
                {value: pyRepr(value), stored: pyRepr(stored), dtype: f.name, max: pyg(f.max, 6)});
    } else if (Math.abs(value) > f.max && f.has_inf) {
      note = tr("{value} is above {dtype}'s largest value {max} by less than half a step, so it rounds down to it; from {limit} on it overflows to inf.",
                {value: pyRepr(value), dtype: f.name, max: pyg(f.max, 6), limit: pyg(f.max + ulp(f.max, f) / 2, 6)});
    } else if (Math.abs(value) > f.max) {
      note = tr("{value} is beyond ±{max} and {dtype} has no infinity: this cast saturates to ±{max} (others give NaN).",
                {value: pyRepr(value), max: pyg(f.max, 6), dtype: f.name});
    } else {
      var lo = stored, hi = stored;
      if (stored < value) hi = nextUp(stored, f); else if (stored > value) lo = nextDown(stored, f);
      if (lo !== hi) rows.push([tr("neighbours"), tr("{lo} ≤ value ≤ {hi} (it rounds to the nearer)", {lo: pyg(lo, 8), hi: pyg(hi, 8)})]);
      n.lo = lo; n.hi = hi; n.spacing = ulp(stored, f);
      rows.push([tr("spacing here"), pyg(n.spacing, 3)]);
      if (b.kind === "subnormal") note = tr("a subnormal: below {normal} {dtype} gives up precision to reach smaller values.",
                                            {normal: pyg(f.smallest_normal, 3), dtype: f.name});
    }
    var html = "<div><div>" + tr("{value} in {dtype} ({layout})", {value: esc(pyRepr(value)), dtype: f.name, layout: f.layout}) + "</div><table>" +
      rows.map(function (r) { return "<tr><td style='padding-right:1em'>" + r[0] + "</td><td>" + r[1] + "</td></tr>"; }).join("") +
      "</table>" + (note ? "<div><i>" + esc(note) + "</i></div>" : "") + "</div>";
    return {html: html, numbers: n};
  };

  LIVE.schedule = function (v, D) {
    if (v.warmup_steps > v.total_steps)
      fail(tr("warm-up ({warmup}) must not be longer than the schedule ({total})", {warmup: v.warmup_steps, total: v.total_steps}));
    var maxLr = D.schedule.max_lr, minLr = maxLr * v.min_ratio, W = v.warmup_steps, S = v.total_steps;
    function lr(s) {                    // lectorch.train.cosine_lr
      if (s < W) return maxLr * s / W;
      if (s >= S) return minLr;
      return minLr + (maxLr - minLr) * 0.5 * (1 + Math.cos(Math.PI * (s - W) / (S - W)));
    }
    var last = S + Math.max(Math.floor(S / 10), 1), lrs = [], sum = 0, s;
    for (s = 0; s <= last; s++) { lrs.push(lr(s)); sum += lrs[s]; }
    var mid = Math.floor((W + S) / 2);
    var n = {steps: lrs.length, lr_sum: sum, lr_warmup_end: lrs[W], lr_mid: lrs[mid], lr_end: lrs[S],
             lr_quarter: lrs[Math.floor(W / 4) + Math.floor(3 * S / 4)]};
    var html = table([[tr("warm-up"), tr("steps 0 → {w}: 0 → {max}", {w: W, max: gfmt(maxLr, 3)})],
                      [tr("cosine decay"), tr("steps {w} → {s}: {max} → {min} (half-way, step {mid}: {lr})",
                                              {w: W, s: S, max: gfmt(maxLr, 3), min: gfmt(minLr, 3), mid: mid, lr: gfmt(lrs[mid], 3)})],
                      [tr("floor"), tr("from step {s} on: {min}", {s: S, min: gfmt(minLr, 3)})]]) +
      chartSvg({title: tr("a cosine schedule with linear warm-up"), xlabel: tr("step"), ylabel: tr("learning rate"),
                ylim: [0, 1.3 * maxLr], vlines: [{x: W, dash: "2 3"}, {x: S}], hlines: [{y: minLr}],
                series: [{color: "#1f77b4", points: lrs.map(function (y, i) { return [i, y]; })}]});
    return {html: html, numbers: n};
  };

  function rooflineSvg(title, peak, bw, I, att, label) {
    var W = drawingWidth(), H = 300, L = 64, R = 16, T = 28, B = 44;
    var ridge = peak / bw, lo = Math.min(I, ridge) / 30, hi = Math.max(I, ridge) * 30;
    var ylo = lo * bw, yhi = peak * 3;
    function x(v) { return L + (W - L - R) * (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)); }
    function y(v) { return H - B - (H - T - B) * (Math.log10(v) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo)); }
    var line = "M" + x(lo) + "," + y(lo * bw) + " L" + x(ridge) + "," + y(peak) + " L" + x(hi) + "," + y(peak);
    return '<svg class="lp-roofline" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="' +
      esc(tr("roofline of {title}: the matmul {label} at intensity {intensity} FLOPs/byte", {title: title, label: label, intensity: gfmt(I, 3)})) + '">' +
      '<text x="' + W / 2 + '" y="16" text-anchor="middle" font-size="13">' + esc(title) + "</text>" +
      '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '" stroke="#888"/>' +
      '<line x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '" stroke="#888"/>' +
      '<path d="' + line + '" fill="none" stroke="#1f77b4" stroke-width="2.5"/>' +
      '<line x1="' + x(ridge) + '" y1="' + y(peak) + '" x2="' + x(ridge) + '" y2="' + (H - B) + '" stroke="#999" stroke-dasharray="4 3"/>' +
      '<circle cx="' + x(I) + '" cy="' + y(att) + '" r="6" fill="black"/>' +
      '<text x="' + Math.min(x(I) + 8, W - R - 120) + '" y="' + (y(att) + 18) + '" font-size="12">' + esc(label) + "</text>" +
      '<text x="' + (L + W - R) / 2 + '" y="' + (H - 10) + '" text-anchor="middle" font-size="12">' + esc(tr("arithmetic intensity (FLOPs/byte, log scale)")) + "</text>" +
      '<text x="14" y="' + (H - B + T) / 2 + '" text-anchor="middle" font-size="12" transform="rotate(-90 14 ' + (H - B + T) / 2 + ')">' + esc(tr("FLOP/s (log)")) + "</text>" +
      '<text x="' + (x(ridge) + 4) + '" y="' + (H - B - 6) + '" font-size="12">' + esc(tr("ridge {ridge}", {ridge: gfmt(ridge, 3)})) + "</text>" +
      '<text x="' + (W - R) + '" y="' + (y(peak) - 6) + '" text-anchor="end" font-size="12">' + esc(tr("peak {peak}", {peak: formatFlops(peak, true)})) + "</text>" +
      "</svg>";
  }

  // ---- wiring ------------------------------------------------------------------------------
  function controlValue(el, spec) {
    if (spec.kind === "fixed") return spec.values[0];
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
      var out = panel.lectorchRecording ? recorded(panel, v)
                                        : LIVE[panel.getAttribute("data-live")](v, window.LECTORCH_LIVE_DATA);
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
  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  function recorded(panel, v) {         // the recorded row at these control values
    var rec = panel.lectorchRecording, kind = panel.getAttribute("data-recorded");
    var row = rec.results.filter(function (r) {
      return Object.keys(r.values).every(function (k) { return same(r.values[k], v[k]); }); })[0];
    if (!row) fail(tr("no recording at these settings: run the notebook to measure them"));
    if (row.numbers.error) fail(row.numbers.error);
    return {html: RECORDED[kind](v, row.numbers, window.LECTORCH_LIVE_DATA), numbers: row.numbers};
  }
  function init() {
    document.querySelectorAll(".lectorch-panel[data-live], .lectorch-panel[data-recorded]").forEach(function (panel) {
      var kind = panel.getAttribute("data-recorded");
      if (kind) {
        var script = panel.querySelector("script.lp-recording");
        if (!RECORDED[kind] || !script) return;
        panel.lectorchRecording = JSON.parse(script.textContent);
      } else if (!LIVE[panel.getAttribute("data-live")] || !window.LECTORCH_LIVE_DATA) return;
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
  window.lectorchLive = {LIVE: LIVE, RECORDED: RECORDED, update: update, gfmt: gfmt, amount: amount};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();

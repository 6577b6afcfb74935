// More of the site's plotly charts (plotly is served from /static/vendor/, no CDN): a problem's best speedup over
// time, a run's per-problem speedups, pass@k against k, fast_p against p and roofline fraction per category, and
// score against search cost across runs with the Pareto front. Each draws only when its page has the element and
// its data, and sets data-drawn="1" once drawn; every chart has a table or list beside it.
(function () {
  if (typeof Plotly === "undefined") { return; }
  function data(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }
  function pct(values) {
    return values.map(function (v) { return v === null ? null : v * 100; });
  }
  var config = {displayModeBar: false, responsive: true};
  function layout(extra) {
    var base = {margin: {t: 30, r: 10, b: 60, l: 60}, height: 300, legend: {orientation: "h", y: 1.15}};
    for (var key in extra) { base[key] = extra[key]; }
    return base;
  }
  function draw(elId, traces, lay) {
    var el = document.getElementById(elId);
    if (!el) { return; }
    Plotly.newPlot(el, traces, layout(lay), config).then(function () { el.setAttribute("data-drawn", "1"); });
  }
  var baseline = function (y) {
    return {type: "line", xref: "paper", x0: 0, x1: 1, y0: y, y1: y, line: {dash: "dot", color: "#888"}};
  };

  var history = data("history-data");
  if (history && history.speedups.length) {
    draw("history-chart", [{
      type: "scatter", mode: "lines+markers", line: {shape: "hv", color: "#2f6f9f"}, x: history.at,
      y: history.speedups, text: history.who, hovertemplate: "%{y:.3f}× by %{text}<br>%{x}<extra></extra>"
    }], {xaxis: {title: {text: "submitted"}, type: "date"},
         yaxis: {title: {text: "best speedup on " + history.profile}, rangemode: "tozero"}, shapes: [baseline(1)]});
  }

  var run = data("run-charts-data");
  if (run) {
    if (run.problems.length) {
      draw("run-speedup-chart", [{
        type: "bar", x: run.problems, y: run.best_speedups, marker: {color: "#2f6f9f"},
        hovertemplate: "%{x}: %{y:.3f}×<extra></extra>"
      }], {height: 340, margin: {t: 30, r: 10, b: 140, l: 60}, xaxis: {tickangle: -45, automargin: true},
           yaxis: {title: {text: "best speedup over the baseline"}, rangemode: "tozero"}, shapes: [baseline(1)]});
    }
    draw("run-passk-chart", [{
      type: "scatter", mode: "lines+markers", x: run.ks, y: pct(run.pass_at), marker: {color: "#1d7a46"},
      hovertemplate: "pass@%{x}: %{y:.1f} %<extra></extra>"
    }], {xaxis: {title: {text: "k"}, dtick: 1}, yaxis: {title: {text: "pass@k (%)"}, range: [0, 100]}});
    draw("run-fastp-chart", [{
      type: "scatter", mode: "lines+markers", x: run.ps, y: pct(run.fast_at), marker: {color: "#8a5a00"},
      hovertemplate: "fast_%{x}@" + run.k + ": %{y:.1f} %<extra></extra>"
    }], {xaxis: {title: {text: "p (times faster than the baseline)"}},
         yaxis: {title: {text: "fast_p@" + run.k + " (%)"}, range: [0, 100]}});
    if (run.categories.length) {
      draw("run-roofline-chart", [{
        type: "bar", x: run.categories, y: pct(run.roofline), marker: {color: "#6b4fa0"},
        hovertemplate: "%{x}: %{y:.1f} % of the roofline<extra></extra>"
      }], {yaxis: {title: {text: "mean roofline fraction (%)"}, rangemode: "tozero"}});
    }
  }

  var pareto = data("pareto-data");
  if (pareto && pareto.points.length) {
    [["tokens", "pareto-tokens-chart", "front_tokens", "tokens the run spent"],
     ["wall_time_s", "pareto-time-chart", "front_time", "wall time the run spent (s)"]].forEach(function (axis) {
      var pts = pareto.points.filter(function (p) { return p[axis[0]] > 0; });
      if (!pts.length) { return; }
      var front = pts.filter(function (p) { return p[axis[2]]; })
        .sort(function (a, b) { return a[axis[0]] - b[axis[0]]; });
      draw(axis[1], [
        {type: "scatter", mode: "markers", name: "runs", x: pts.map(function (p) { return p[axis[0]]; }),
         y: pts.map(function (p) { return p.score * 100; }), text: pts.map(function (p) { return p.label; }),
         marker: {color: "#2f6f9f", size: 9}, hovertemplate: "%{text}<br>%{x}: %{y:.1f} %<extra></extra>"},
        {type: "scatter", mode: "lines+markers", name: "Pareto front", line: {shape: "hv", color: "#c0612b"},
         x: front.map(function (p) { return p[axis[0]]; }), y: front.map(function (p) { return p.score * 100; }),
         text: front.map(function (p) { return p.label; }), hovertemplate: "%{text}<extra>front</extra>"}
      ], {xaxis: {title: {text: axis[3]}, type: "log"}, yaxis: {title: {text: "pass@k (%)"}, range: [0, 100]}});
    });
  }
})();

// The site's plotly charts (plotly is served from /static/vendor/, no CDN). Each draws into an element only
// when the page has it and its data; every chart has a table beside it for readers without JavaScript.
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
  var layout = function (extra) {
    var base = {margin: {t: 30, r: 10, b: 90, l: 55}, height: 320, barmode: "group",
                legend: {orientation: "h", y: 1.12}};
    for (var key in extra) { base[key] = extra[key]; }
    return base;
  };

  // A run's per-category bars: pass@k, and fast_1@k, fast_2@k where they were computed (never on a CPU profile,
  // whose timings only check the pipeline: there the legend named two series that had no bar).
  var run = data("category-data");
  var runEl = document.getElementById("category-chart");
  var computed = function (values) { return (values || []).some(function (v) { return v !== null; }); };
  if (run && runEl) {
    var runBars = [
      {type: "bar", name: "pass@" + run.k, x: run.categories, y: pct(run.pass_at_k), marker: {color: "#2f6f9f"}}
    ];
    if (computed(run.fast_1) || computed(run.fast_2)) {
      runBars.push({type: "bar", name: "fast₁@" + run.k, x: run.categories, y: pct(run.fast_1),
                    marker: {color: "#1d7a46"}});
      runBars.push({type: "bar", name: "fast₂@" + run.k, x: run.categories, y: pct(run.fast_2),
                    marker: {color: "#8a5a00"}});
    }
    Plotly.newPlot(runEl, runBars, layout({yaxis: {title: {text: "% of scorable problems"}, range: [0, 100]}}),
                   config);
    runEl.setAttribute("data-drawn", "1");
  }

  // Two runs' pass@k and fast_1@k per category, both at the common k (fast_1 only where either run was timed).
  var cmp = data("compare-data");
  var cmpEl = document.getElementById("compare-chart");
  if (cmp && cmpEl) {
    var timed = function (values) { return (values || []).some(function (v) { return v !== null; }); };
    var bars = [
      {type: "bar", name: "pass@" + cmp.k + " " + cmp.a_label, x: cmp.categories, y: pct(cmp.a), marker: {color: "#2f6f9f"}},
      {type: "bar", name: "pass@" + cmp.k + " " + cmp.b_label, x: cmp.categories, y: pct(cmp.b), marker: {color: "#c0612b"}}
    ];
    if (timed(cmp.a_fast_1) || timed(cmp.b_fast_1)) {
      bars.push({type: "bar", name: "fast₁@" + cmp.k + " " + cmp.a_label, x: cmp.categories, y: pct(cmp.a_fast_1),
                 marker: {color: "#8fb8d6"}});
      bars.push({type: "bar", name: "fast₁@" + cmp.k + " " + cmp.b_label, x: cmp.categories, y: pct(cmp.b_fast_1),
                 marker: {color: "#e7b08f"}});
    }
    Plotly.newPlot(cmpEl, bars, layout({yaxis: {title: {text: "% of scorable problems"}, range: [0, 100]}}), config);
    cmpEl.setAttribute("data-drawn", "1");
  }

  // A problem's distribution of speedups over every passed attempt.
  var dist = data("speedup-data");
  var distEl = document.getElementById("speedup-chart");
  if (dist && distEl && dist.speedups.length) {
    Plotly.newPlot(distEl, [{type: "histogram", x: dist.speedups, marker: {color: "#2f6f9f"}, nbinsx: 30,
                             hovertemplate: "%{x}: %{y} solutions<extra></extra>"}],
      layout({height: 280, margin: {t: 30, r: 10, b: 50, l: 50}, bargap: 0.05,
              xaxis: {title: {text: "speedup over the baseline on " + dist.profile}},
              // counts are whole numbers: ticks every 1 (or more), never 0.5
              yaxis: {title: {text: "passed solutions"}, tickformat: ",d", dtick: Math.max(1, Math.ceil(dist.speedups.length / 8)),
                      rangemode: "tozero"},
              shapes: [{type: "line", yref: "paper", y0: 0, y1: 1, x0: 1, x1: 1, line: {dash: "dot", color: "#888"}}]}),
      config);
    distEl.setAttribute("data-drawn", "1");
  }
})();

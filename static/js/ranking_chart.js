// Draws the ranking's speedups as a bar chart with plotly (served from /static/vendor/, no CDN).
(function () {
  var el = document.getElementById("ranking-chart");
  var data = document.getElementById("ranking-data");
  if (!el || !data || typeof Plotly === "undefined") { if (el) el.remove(); return; }
  var chart = JSON.parse(data.textContent);
  Plotly.newPlot(el, [{
    type: "bar", x: chart.labels, y: chart.speedups, marker: {color: "#2f6f9f"},
    hovertemplate: "%{x}: %{y:.3f}×<extra></extra>"
  }], {
    margin: {t: 30, r: 10, b: 60, l: 50}, height: 280,
    yaxis: {title: {text: "speedup vs baseline"}, rangemode: "tozero"},
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {dash: "dot", color: "#888"}}],
    title: {text: "Speedup on " + chart.profile, font: {size: 14}}
  }, {displayModeBar: false, responsive: true});
})();

(function(){
  var errors = [];
  window.addEventListener('error', function(e){ errors.push(String(e.message)); document.body.setAttribute('data-errors', String(errors.length)); });
  var palette = ['#0969da','#cf222e','#1a7f37','#8250df','#bf8700','#0598bc','#bc4c00','#6e7781','#d63384','#2da44e'];
  function color(i){ return palette[i % palette.length]; }
  function drawn(cv){
    try {
      // Read the pixels back through a scratch canvas made for readback (keeps Chart.js's own
      // context fast and Chrome quiet about repeated getImageData).
      var aux = document.createElement('canvas'); aux.width = cv.width; aux.height = cv.height;
      var ctx = aux.getContext('2d', {willReadFrequently: true}); ctx.drawImage(cv, 0, 0);
      var d = ctx.getImageData(0, 0, aux.width, aux.height).data; var n = 0;
      for (var i = 3; i < d.length; i += 4 * 13) { if (d[i] !== 0) { n++; if (n > 20) break; } }
      return n > 20;
    } catch (e) { return false; }
  }
  var charts = [];
  function absent(section, text){ var p = document.createElement('p'); p.className = 'absent'; p.textContent = text; document.getElementById(section).appendChild(p); }
  function chart(section, title, cfg){
    var holder = document.getElementById(section).querySelector('.charts');
    if (!holder) { holder = document.createElement('div'); holder.className = 'charts'; document.getElementById(section).appendChild(holder); }
    var box = document.createElement('div'); box.className = 'chart'; var cv = document.createElement('canvas');
    cv.setAttribute('data-chart', title); box.appendChild(cv); holder.appendChild(box);
    cfg.options = cfg.options || {};
    cfg.options.animation = false; cfg.options.responsive = true; cfg.options.maintainAspectRatio = false;
    cfg.options.plugins = cfg.options.plugins || {};
    cfg.options.plugins.title = {display: true, text: title};
    try { var c = new Chart(cv, cfg); charts.push([c, cv]); if (drawn(cv)) cv.setAttribute('data-rendered', '1'); }
    catch (e) { cv.setAttribute('data-rendered', 'error'); console.error('chart "' + title + '": ' + e); }
  }
  // Vertical dashed lines at epoch starts; each run's id at its first epoch, in a band above the
  // plot (never over the data), on the first of two rows where it does not run into the label
  // before it, else left out. Later epochs' lines closer than 8 px to the last one drawn are skipped.
  var epochMarkers = {
    id: 'epochMarkers',
    beforeLayout: function(c){  // the band: 24 px more below the legend, above the plot
      var l = c.legend; if (!l || l.tsBand) return; l.tsBand = true;
      var fit = l.fit; l.fit = function(){ fit.call(this); this.height += 24; };
    },
    afterDatasetsDraw: function(c){
      var m = DATA.epochs; if (!m || !c.scales.x) return; var ctx = c.ctx, a = c.chartArea;
      ctx.save(); ctx.setLineDash([4, 3]); ctx.lineWidth = 1; ctx.font = '10px sans-serif';
      var rowEnd = [-Infinity, -Infinity], lastX = -Infinity;
      for (var i = 0; i < m.length; i++) {
        var x = c.scales.x.getPixelForValue(m[i].t_s); if (x < a.left || x > a.right) continue;
        var first = m[i].epoch === 1;
        if (!first && x - lastX < 8) continue;
        lastX = x;
        ctx.strokeStyle = first ? '#57606a' : '#d0d7de';
        ctx.beginPath(); ctx.moveTo(x, a.top); ctx.lineTo(x, a.bottom); ctx.stroke();
        if (!first) continue;
        var w = ctx.measureText(m[i].run).width, tx = Math.min(x + 2, c.width - w - 2);
        var row = rowEnd[0] < tx ? 0 : (rowEnd[1] < tx ? 1 : -1);
        if (row < 0) continue;  // no room: the line stays, the label would cover another
        ctx.fillStyle = '#57606a'; ctx.fillText(m[i].run, tx, a.top - 4 - (1 - row) * 11);
        rowEnd[row] = tx + w + 6;
      }
      ctx.restore();
    }
  };
  function bars(section, title, labels, sets, yTitle, horizontal, stacked){
    chart(section, title, {type: 'bar', data: {labels: labels, datasets: sets.map(function(s, i){ return {label: s.label, data: s.data, backgroundColor: s.color || color(i)}; })},
      options: {indexAxis: horizontal ? 'y' : 'x', scales: {x: {stacked: !!stacked, title: {display: !!horizontal, text: yTitle}}, y: {stacked: !!stacked, beginAtZero: true, title: {display: !horizontal, text: yTitle}}}}});
  }
  var D = DATA;
  // Speed-up and throughput
  if (D.speedup.labels.length) bars('speedup', 'Training speed-up over the CPU (×, > 1: GPU faster)', D.speedup.labels, [{label: 'speed-up', data: D.speedup.values}], '×');
  else absent('speedup', D.speedup.absent);
  // Summary: throughput of every workload and device, right after the summary tables
  if (D.throughput.labels.length)
    chart('summary', 'Steady training throughput (samples/s' + (D.throughput.log ? ', log scale' : '') + ')', {type: 'bar',
      data: {labels: D.throughput.labels, datasets: D.throughput.sets.map(function(s, i){ return {label: s.label, data: s.data, backgroundColor: color(i)}; })},
      options: {scales: {y: {type: D.throughput.log ? 'logarithmic' : 'linear', beginAtZero: !D.throughput.log, title: {display: true, text: 'samples/s'}}}}});
  else absent('summary', 'no steady training throughput in these runs');
  // Batch-size scaling: samples/s over the batch size; the saturation point drawn larger
  if (D.batches.sets.length)
    chart('batches', 'Throughput over batch size (the large point: saturation)', {type: 'line',
      data: {datasets: D.batches.sets.map(function(s, i){ return {label: s.label, data: s.points, borderColor: color(i), backgroundColor: color(i),
        pointRadius: s.points.map(function(p){ return p.x === s.saturation ? 7 : 3; }), parsing: false}; })},
      options: {scales: {x: {type: 'logarithmic', title: {display: true, text: 'batch size (samples)'}}, y: {beginAtZero: true, title: {display: true, text: 'samples/s'}}}}});
  else absent('batches', D.batches.absent);
  // Energy
  if (D.energy.labels.length) bars('energy', 'Energy per sample (mJ)', D.energy.labels, [{label: 'mJ per sample', data: D.energy.values}], 'mJ');
  else absent('energy', D.energy.absent);
  // Latency
  if (D.latency.labels.length) bars('latency', 'Inference latency, single stream (ms)', D.latency.labels, D.latency.sets, 'ms');
  else absent('latency', D.latency.absent);
  // Time series
  if (D.series.groups.length) {
    D.series.groups.forEach(function(g){
      chart('timeseries', g.title, {type: 'line', data: {datasets: g.sets.map(function(s, i){ return {label: s.label, data: s.points, borderColor: color(i), backgroundColor: color(i), pointRadius: 0, borderWidth: 1.5, parsing: false}; })},
        options: {normalized: true, scales: {x: {type: 'linear', title: {display: true, text: 's since the matrix started'}}, y: {beginAtZero: true, title: {display: true, text: g.unit}}}},
        plugins: [epochMarkers]});
    });
  } else absent('timeseries', D.series.absent);
  // Step breakdown
  if (D.steps.labels.length) bars('steps', 'Time per training step by phase (ms)', D.steps.labels, D.steps.sets, 'ms per step', true, true);
  else absent('steps', D.steps.absent);
  // Operators
  if (D.ops.length) D.ops.forEach(function(o){ bars('operators', 'Top operators on ' + o.device + ' (' + o.run + ', ' + o.key + ')', o.labels, [{label: 'ms', data: o.ms}], 'ms', true); });
  else absent('operators', D.opsAbsent);
  // Re-check after layout settles (a resize redraws).
  setTimeout(function(){
    charts.forEach(function(p){ if (drawn(p[1])) p[1].setAttribute('data-rendered', '1'); });
    document.body.setAttribute('data-charts', String(charts.length));
    // Where the summary (tables and their chart) ends, in CSS pixels from the top of the page:
    // the end-to-end test checks that it fits the first screen.
    var sum = document.getElementById('summary');
    if (sum) { var last = sum.querySelector('canvas') || sum; document.body.setAttribute('data-summary-bottom', String(Math.round(last.getBoundingClientRect().bottom + window.scrollY))); }
    // The page's width against the viewport's (the test requires no horizontal scrolling).
    document.body.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
    document.body.setAttribute('data-viewport-width', String(document.documentElement.clientWidth));
    document.body.setAttribute('data-charts-done', '1');
  }, 50);
})();

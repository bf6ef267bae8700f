
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

// Sortable tables and the charts' hover read-out; nothing is fetched.
(function () {
  "use strict";
  function key(td) {
    if (!td) return "";
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(parseFloat(v))) return parseFloat(v);
    return td.textContent.trim().toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("data-sort") !== "asc";
        table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("data-sort"); });
        th.setAttribute("data-sort", asc ? "asc" : "desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var tip = document.getElementById("tip");
  function nums(s) { return (s || "").split(" ").map(parseFloat); }
  function fmtX(x, unit) {
    if (unit === "pct") { var p = (1 - Math.pow(10, -x)) * 100; return "p" + p.toFixed(Math.max(0, Math.round(x) - 1)); }
    return "t = " + x.toFixed(x < 10 ? 2 : 1) + " s";
  }
  function fmtY(y, unit) {
    if (isNaN(y)) return "–";
    var a = Math.abs(y), d = a >= 100 ? 1 : a >= 1 ? 2 : 3;
    return y.toFixed(d) + (unit === "%" ? "%" : unit ? " " + unit : "");
  }
  document.querySelectorAll("figure.chart svg").forEach(function (svg) {
    var x0 = parseFloat(svg.getAttribute("data-x0")), x1 = parseFloat(svg.getAttribute("data-x1"));
    var lo = parseFloat(svg.getAttribute("data-lo")), hi = parseFloat(svg.getAttribute("data-hi"));
    var xu = svg.getAttribute("data-xunit"), yu = svg.getAttribute("data-yunit");
    var paths = Array.prototype.map.call(svg.querySelectorAll("path[data-name]"), function (p) {
      return { name: p.getAttribute("data-name"), xs: nums(p.getAttribute("data-x")), ys: nums(p.getAttribute("data-y")) };
    });
    var cursor = svg.querySelector("line.cursor");
    svg.addEventListener("mousemove", function (ev) {
      var box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
      var px = (ev.clientX - box.left) * vb.width / box.width;
      if (px < x0 || px > x1) { tip.hidden = true; cursor.style.visibility = "hidden"; return; }
      var x = lo + (px - x0) / (x1 - x0) * (hi - lo);
      var lines = [], at = null;
      paths.forEach(function (p) {
        var best = -1, dist = Infinity;
        for (var i = 0; i < p.xs.length; i++) { var d = Math.abs(p.xs[i] - x); if (d < dist) { dist = d; best = i; } }
        if (best < 0) return;
        if (at === null) at = p.xs[best];
        lines.push(p.name + ": " + fmtY(p.ys[best], yu));
      });
      if (at === null) return;
      cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.style.visibility = "visible";
      tip.textContent = fmtX(at, xu) + "\n" + lines.join("\n");
      tip.hidden = false;
      tip.style.left = (ev.clientX + 14) + "px"; tip.style.top = (ev.clientY + 10) + "px";
    });
    svg.addEventListener("mouseleave", function () { tip.hidden = true; cursor.style.visibility = "hidden"; });
  });
  // Says the script ran to its end (tests read it from the rendered page).
  document.body.setAttribute("data-ready", "1");
})();

// Sortable tables and row filters. No dependencies, works from file:// and offline.
(function () {
  "use strict";
  function cellValue(row, col) {
    var cell = row.cells[col];
    if (!cell) return "";
    return cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    // Columns where smaller is better (cost, latency, time-to-retrievability) start ascending.
    var ascendingFirst = (table.dataset.ascendingFirst || "").split(" ");
    Array.prototype.forEach.call(headers, function (th, col) {
      th.tabIndex = 0;
      th.setAttribute("role", "columnheader");
      function sort() {
        // The first click puts the best first: numbers descending unless smaller is better; text ascending.
        var numeric = th.dataset.type === "num";
        var current = th.getAttribute("aria-sort");
        var asc = current ? current === "descending" : !numeric || ascendingFirst.indexOf(th.dataset.metric) !== -1;
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, col), y = cellValue(b, col);
          if (numeric) {
            // Missing figures (—) always sort last, whichever the direction.
            if (x === "" && y === "") return 0;
            if (x === "") return 1;
            if (y === "") return -1;
            return asc ? parseFloat(x) - parseFloat(y) : parseFloat(y) - parseFloat(x);
          }
          return asc ? x.localeCompare(y) : y.localeCompare(x);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sort(); }
      });
    });
  });
  document.querySelectorAll("input[data-filter]").forEach(function (input) {
    var table = document.getElementById(input.dataset.filter);
    if (!table) return;
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) === -1;
      });
    });
  });
})();

// Sort a table by a clicked header: numbers by data-value, text otherwise. No dependencies.
document.querySelectorAll("table.sortable").forEach(function (table) {
  var headers = table.querySelectorAll("th");
  headers.forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = !th.classList.contains("sorted-asc");
      headers.forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(asc ? "sorted-asc" : "sorted-desc");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var numeric = th.dataset.type === "num";
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.value !== undefined ? a.cells[col].dataset.value : a.cells[col].textContent.trim();
        var y = b.cells[col].dataset.value !== undefined ? b.cells[col].dataset.value : b.cells[col].textContent.trim();
        if (numeric) {
          var nx = x === "" ? -Infinity : parseFloat(x), ny = y === "" ? -Infinity : parseFloat(y);
          return asc ? nx - ny : ny - nx;
        }
        return asc ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});

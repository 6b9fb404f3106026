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
  // A vendor's row listing, filtered by its URL (?task=search&stratum=news&class=timeout&verdict=incorrect&miss=...)
  // as a figure's link sets it (publish/rowlinks.py); a value may list several, comma-separated. Without a filter,
  // or without script, every row shows.
  var FIELDS = [["task", "Task"], ["stratum", "Stratum"], ["class", "Class"], ["verdict", "Verdict"], ["miss", "Miss reason"]];
  function matches(wanted, have) {
    return !wanted || wanted.split(",").indexOf(have) !== -1;
  }
  document.querySelectorAll("table[data-row-filter]").forEach(function (table) {
    var params = new URLSearchParams(window.location.search);
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var paged = document.querySelector("nav.pager") !== null;
    var form = document.createElement("form");
    form.className = "row-filter";
    form.setAttribute("role", "search");
    form.setAttribute("aria-label", "filter the rows");
    var selects = {};
    FIELDS.forEach(function (field) {
      var name = field[0], wanted = params.get(name) || "", values = [];
      rows.forEach(function (r) { var v = r.dataset[name]; if (v && values.indexOf(v) === -1) values.push(v); });
      if (values.length < 2 && !wanted) return; // nothing to choose from
      if (wanted && values.indexOf(wanted) === -1) values.push(wanted);
      values.sort();
      var label = document.createElement("label");
      label.textContent = field[1] + " ";
      var select = document.createElement("select");
      select.name = name;
      select.add(new Option("any", ""));
      values.forEach(function (v) { select.add(new Option(v, v)); });
      select.value = wanted;
      label.appendChild(select);
      form.appendChild(label);
      selects[name] = select;
    });
    var status = document.createElement("p");
    status.className = "note row-filter-status";
    status.setAttribute("role", "status");
    function apply(remember) {
      var shown = 0, query = new URLSearchParams();
      Object.keys(selects).forEach(function (n) { if (selects[n].value) query.set(n, selects[n].value); });
      rows.forEach(function (r) {
        var keep = Object.keys(selects).every(function (n) { return matches(selects[n].value, r.dataset[n] || ""); });
        r.hidden = !keep;
        if (keep) shown += 1;
      });
      var search = query.toString() ? "?" + query.toString() : "";
      status.textContent = search
        ? shown + " of " + rows.length + " rows" + (paged ? " on this page" : "") + " match the filter."
        : "Every row" + (paged ? " of this page" : "") + " shows (" + rows.length + ").";
      document.querySelectorAll("nav.pager a").forEach(function (a) { a.search = search; });
      if (remember) {
        try { history.replaceState(null, "", location.pathname + search + location.hash); } catch (e) { /* file:// */ }
      }
    }
    form.addEventListener("change", function () { apply(true); });
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    var holder = table.closest(".table-scroll") || table;
    holder.parentNode.insertBefore(form, holder);
    holder.parentNode.insertBefore(status, holder);
    apply(false);
    // a figure's link opens the rows: with a filter, or to the rows themselves
    function reveal(initial) {
      if (!(initial && params.toString()) && location.hash !== "#public-rows") return;
      var details = table.closest("details");
      var target = location.hash && document.getElementById(location.hash.slice(1));
      if (details) details.open = true;
      if (target) target.scrollIntoView();
    }
    reveal(true);
    window.addEventListener("hashchange", function () { reveal(false); });
  });
})();

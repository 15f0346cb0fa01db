// Sorting by a column header: numbers as numbers (data-sort holds the raw value), text as text;
// cells without a value always go last; equal values keep the ranking's order.
(function () {
  "use strict";

  function value(cell, numeric) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent;
    raw = raw.trim();
    if (raw === "") return null;
    if (!numeric) return raw.toLocaleLowerCase();
    var n = Number(raw);
    return isNaN(n) ? null : n;
  }

  function sortBy(table, header, column) {
    var numeric = header.getAttribute("data-type") === "num";
    var now = header.getAttribute("aria-sort");
    var direction = now === "ascending" ? "descending"
      : now === "descending" ? "ascending" : (header.getAttribute("data-first") || "ascending");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
    var sign = direction === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, key: value(row.cells[column], numeric), order: Number(row.getAttribute("data-order") || i) };
    });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        if (a.key === b.key) return a.order - b.order;
        return a.key === null ? 1 : -1;
      }
      if (a.key < b.key) return -sign;
      if (a.key > b.key) return sign;
      return a.order - b.order;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }

  // One listener on the document, not one per button: a live page (templates/live.js) swaps its tables for new
  // ones, and their buttons sort too.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("table.sortable thead th button") : null;
    if (!button) return;
    var header = button.closest("th");
    sortBy(header.closest("table"), header, header.cellIndex);
  });
})();

// Filter the catalog table in the page: text, category, status, language. No network, no library.
(function () {
  "use strict";
  var q = document.getElementById("q");
  var category = document.getElementById("category");
  var status = document.getElementById("status");
  var language = document.getElementById("language");
  var count = document.getElementById("count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#catalog tbody tr"));

  function apply() {
    var words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var d = row.dataset;
      var ok = words.every(function (w) { return d.search.indexOf(w) !== -1; }) &&
        (!category.value || d.category === category.value) &&
        (!status.value || d.status === status.value) &&
        (!language.value || d.languages.split(" ").indexOf(language.value) !== -1);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " skeletons shown";
  }

  // a filter in the address (index.html#q=split) can be shared
  var params = new URLSearchParams(location.hash.slice(1));
  if (params.get("q")) { q.value = params.get("q"); }
  [q, category, status, language].forEach(function (el) {
    el.addEventListener("input", apply);
    el.addEventListener("change", apply);
  });
  apply();
})();

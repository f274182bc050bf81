(function () {
  "use strict";
  // The page's filters: each entry names its repository groups (data-repo) and verdicts
  // (data-verdicts); an entry without one of them is not filtered by it. Without scripts the
  // bar stays hidden and everything is shown.
  var bar = document.getElementById("filters");
  if (!bar) { return; }
  var verdict = document.getElementById("filter-verdict");
  var repo = document.getElementById("filter-repo");
  var said = document.getElementById("filter-said");
  var items = document.querySelectorAll("[data-repo],[data-verdicts]");
  function has(list, word) { return (" " + list + " ").indexOf(" " + word + " ") >= 0; }
  function apply() {
    var v = verdict.value, r = repo.value, hidden = 0;
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var repoOk = !r || !el.hasAttribute("data-repo") || has(el.getAttribute("data-repo"), r);
      var verdictOk = !v || !el.hasAttribute("data-verdicts") ||
        has(el.getAttribute("data-verdicts"), v);
      el.hidden = !(repoOk && verdictOk);
      if (el.hidden) { hidden++; }
    }
    said.textContent = hidden ? hidden + " entries hidden by the filters" : "";
  }
  verdict.addEventListener("change", apply);
  repo.addEventListener("change", apply);
  // Back on the page, the browser puts the lists' last choice back after the load, without a
  // change event: what they show is what is applied.
  window.addEventListener("pageshow", apply);
  bar.hidden = false;
  apply();
}());

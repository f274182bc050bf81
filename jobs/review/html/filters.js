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
  // A section whose every entry the filters hide says so: its heading's count alone would
  // read as entries missing.
  var sections = [];
  var all = document.querySelectorAll("section");
  for (var s = 0; s < all.length; s++) {
    var entries = all[s].querySelectorAll("[data-repo],[data-verdicts]");
    if (!entries.length) { continue; }
    var note = document.createElement("p");
    note.className = "note filtered-out";
    note.textContent = "Nothing here matches the filters.";
    note.hidden = true;
    var head = all[s].querySelector("h2");
    head.parentNode.insertBefore(note, head.nextSibling);
    sections.push({entries: entries, note: note});
  }
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
    for (var j = 0; j < sections.length; j++) {
      var left = false;
      for (var k = 0; k < sections[j].entries.length && !left; k++) {
        left = !sections[j].entries[k].hidden;
      }
      sections[j].note.hidden = left;
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

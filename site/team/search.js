/* loopx static search: a progressive enhancement of the index page. Without script (or
   without the goals' search-index.js) the page is complete and the search box stays hidden.
   Works from file:// too: each goal's piece of the index arrives as a script that adds it to
   window.loopxSearch, not through fetch(). No dependencies. */
(function () {
  "use strict";
  var box = document.getElementById("search");
  var pieces = window.loopxSearch;
  if (!box || !pieces || !pieces.length) return;
  var input = box.querySelector("input");
  var list = box.querySelector("ol");
  var said = box.querySelector("[role=status]");
  var items = [];
  pieces.forEach(function (piece) {
    (piece.items || []).forEach(function (it) {
      items.push({ it: it, text: (it.title + " " + (it.todo_id || "") + " " + it.goal_id).toLowerCase() });
    });
  });
  function run() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = "";
    if (!words.length) { said.textContent = ""; return; }
    var hits = items.filter(function (x) {
      return words.every(function (w) { return x.text.indexOf(w) !== -1; });
    });
    hits.slice(0, 50).forEach(function (x) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = x.it.href;
      a.textContent = x.it.title;
      var meta = document.createElement("span");
      meta.className = "muted";
      meta.textContent = " " + (x.it.kind === "todo" ? "todo of " + x.it.goal_id : "goal") + " · " + x.it.status;
      li.appendChild(a);
      li.appendChild(meta);
      list.appendChild(li);
    });
    said.textContent = hits.length + (hits.length === 1 ? " match" : " matches") +
      (hits.length > 50 ? ", the first 50 shown" : "");
  }
  input.addEventListener("input", run);
  box.hidden = false;
  if (input.value) run();
})();

(function () {
  "use strict";
  // Run data reaches the page through textContent only: never as markup.
  var data = JSON.parse(document.getElementById("ck-data").textContent);
  var panes = [];
  var active = null;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
  }

  function table(node, header, rows) {
    clear(node);
    if (!rows.length) { node.appendChild(el("p", "none", "none")); return; }
    var t = el("table", "state");
    var tr = el("tr");
    header.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    t.appendChild(tr);
    rows.forEach(function (cells) {
      var row = el("tr");
      cells.forEach(function (c) {
        var td = el("td");
        (Array.isArray(c) ? c : [c]).forEach(function (line) { td.appendChild(el("div", null, line)); });
        row.appendChild(td);
      });
      t.appendChild(row);
    });
    node.appendChild(t);
  }

  function showSource(node, source) {
    clear(node);
    if (!source) { node.appendChild(el("p", "none", "no source")); return; }
    node.appendChild(el("div", "where", source.file + ":" + source.line + " in " + source["function"]));
    var t = el("table", "code");
    source.lines.forEach(function (pair) {
      var tr = el("tr", pair[0] === source.line ? "hl" : null);
      tr.appendChild(el("td", "lineno", pair[0]));
      tr.appendChild(el("td", "text", pair[1]));
      t.appendChild(tr);
    });
    node.appendChild(t);
  }

  function showObjects(p, snap) {
    var by = { lock: [], event: [], queue: [], other: [] };
    snap.objects.forEach(function (o) { (by[o.panel] || by.other).push(o); });
    table(p.part("locks"), ["object", "owner", "waiters"], by.lock.map(function (o) {
      var owner = o.owner === null || o.owner === undefined ? "free" : o.owner;
      if (o.value !== undefined) { owner = "value " + o.value; }
      return [o.label, owner, (o.waiters || []).join(", ") || "-"];
    }));
    table(p.part("events"), ["event", "flag", "waiters"], by.event.map(function (o) {
      return [o.label, o.set ? "set" : "unset", (o.waiters || []).join(", ") || "-"];
    }));
    table(p.part("queues"), ["queue", "items", "size", "closed"], by.queue.map(function (o) {
      var size = String(o.size) + (o.capacity === null || o.capacity === undefined ? "" : " / " + o.capacity);
      return [o.label, o.items.length ? o.items : ["(empty)"], size, o.closed ? "closed" : "open"];
    }));
    table(p.part("others"), ["object", "state"], by.other.map(function (o) {
      var lines = Object.keys(o).filter(function (k) {
        return k !== "panel" && k !== "label" && k !== "kind";
      }).map(function (k) { return k + ": " + (Array.isArray(o[k]) ? o[k].join(", ") : o[k]); });
      return [o.label, lines];
    }));
  }

  function Pane(root, pane) {
    this.root = root;
    this.pane = pane;
    this.i = 0;
    this.rows = root.querySelectorAll("tr.step");
    this.slider = root.querySelector("input.slider");
    var self = this;
    this.slider.addEventListener("input", function () { self.show(Number(self.slider.value)); });
    root.querySelector("button.prev").addEventListener("click", function () { self.show(self.i - 1); });
    root.querySelector("button.next").addEventListener("click", function () { self.show(self.i + 1); });
    Array.prototype.forEach.call(this.rows, function (tr) {
      tr.addEventListener("click", function () { self.show(Number(tr.getAttribute("data-i"))); });
    });
    root.addEventListener("mousedown", function () { activate(self); });
    root.addEventListener("focusin", function () { activate(self); });
  }

  Pane.prototype.part = function (name) { return this.root.querySelector("." + name); };

  Pane.prototype.show = function (i) {
    var total = this.pane.total;
    if (!total) { return; }
    i = Math.max(0, Math.min(total - 1, i));
    if (this.rows[this.i]) { this.rows[this.i].classList.remove("current"); }
    this.i = i;
    var tr = this.rows[i];
    tr.classList.add("current");
    this.reveal(tr);
    this.slider.value = String(i);
    this.part("counter").textContent = "step " + (i + 1) + " / " + total;
    this.showNow(i);
  };

  // Scroll the lanes (not the window) so that the row is in view below the header.
  Pane.prototype.reveal = function (tr) {
    var wrap = this.part("lanes-wrap");
    var box = wrap.getBoundingClientRect();
    var row = tr.getBoundingClientRect();
    var head = wrap.querySelector("thead").getBoundingClientRect().height;
    if (row.top < box.top + head) {
      wrap.scrollTop -= box.top + head - row.top;
    } else if (row.bottom > box.bottom) {
      wrap.scrollTop += row.bottom - box.bottom;
    }
  };

  Pane.prototype.showNow = function (i) {
    var row = this.pane.rows[i];
    var now = this.part("now");
    clear(now);
    var head = el("p", "op-line" + (i === this.pane.failing ? " failing" : ""),
      this.pane.threads[row.tid] + ": " + row.op + "  @ " + row.where);
    now.appendChild(head);
    if (i === this.pane.failing) { now.appendChild(el("p", "failing-note", "The failing step.")); }
    if (row.preempted !== null && row.preempted !== undefined) {
      now.appendChild(el("p", "preempt-note", "Preemption: switched away from " +
        this.pane.threads[row.preempted] + ", which could have gone on."));
    }
    var snap = this.pane.snapshots[i];
    var parts = ["source", "threads", "locks", "events", "queues", "others"];
    if (!snap) {
      var self = this;
      parts.forEach(function (name) {
        clear(self.part(name));
        self.part(name).appendChild(el("p", "none", self.pane.unrecorded));
      });
      this.part("clock").textContent = "virtual clock: t = " + row.time + " s";
      return;
    }
    showSource(this.part("source"), snap.source);
    table(this.part("threads"), ["thread", "state", "stack (innermost first)"], snap.threads.map(function (t) {
      return ["T" + t.tid + " " + t.name, t.state, t.stack.length ? t.stack : ["-"]];
    }));
    showObjects(this, snap);
    this.part("clock").textContent = "virtual clock: t = " + snap.clock + " s";
  };

  function activate(pane) {
    if (active === pane) { return; }
    if (active) { active.root.classList.remove("active"); }
    active = pane;
    pane.root.classList.add("active");
  }

  data.panes.forEach(function (pane) {
    var root = document.getElementById("pane-" + pane.id);
    if (!root) { return; }
    var p = new Pane(root, pane);
    panes.push(p);
    p.show(pane.start === undefined || pane.start === null ? 0 : pane.start);
  });
  if (panes.length) { activate(panes[0]); }

  document.addEventListener("keydown", function (event) {
    if (!active || event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.target && event.target.type === "range") { return; } // the slider moves itself
    var moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
    if (event.key in moves) {
      active.show(active.i + moves[event.key]);
    } else if (event.key === "Home") {
      active.show(0);
    } else if (event.key === "End") {
      active.show(active.pane.total - 1);
    } else {
      return;
    }
    event.preventDefault();
  });
}());

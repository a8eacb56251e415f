// Interactive flame graph, embedded by WriteSVG after its settings
// (flameGraphSettings). Every frame is a <g data-s data-v> in #frames
// holding <title>, <rect> and <text>: data-s and data-v are the frame's
// left edge and width in samples, exact, so zooming never accumulates
// rounding. Hover shows a frame's title; a click zooms into a frame, a
// click on the root or on "Reset Zoom" zooms out; the Search button, Ctrl-F
// or F3 highlights the frames whose name matches a regular expression.
(function () {
	"use strict";
	var cfg = flameGraphSettings;
	var details = document.getElementById("details");
	var matched = document.getElementById("matched");
	var searchButton = document.getElementById("search");
	var unzoomButton = document.getElementById("unzoom");
	var container = document.getElementById("frames");
	// Tolerance for comparing edges: half a sample while totals are exact
	// in a double (below 2^53), else a few units of rounding, far below any
	// drawn frame's width.
	var eps = cfg.total < 9007199254740992 ? 0.5 : cfg.total * Math.pow(2, -50);

	var frames = [];
	var byGroup = new Map();
	for (var i = 0; i < container.children.length; i++) {
		var g = container.children[i];
		var rect = g.getElementsByTagName("rect")[0];
		var text = g.getElementsByTagName("text")[0];
		var title = g.getElementsByTagName("title")[0].textContent;
		var f = {
			group: g,
			rect: rect,
			text: text,
			name: title.slice(0, title.lastIndexOf(" (")),
			start: Number(g.getAttribute("data-s")),
			value: Number(g.getAttribute("data-v")),
			// level grows from the root towards the leaves
			level: Number(rect.getAttribute("y")) * (cfg.icicle ? 1 : -1),
			x: rect.getAttribute("x"),
			width: rect.getAttribute("width"),
			label: text.textContent,
			fill: rect.getAttribute("fill")
		};
		frames.push(f);
		byGroup.set(g, f);
	}
	var root = frames[0];
	var searchTerm = null;

	function frameOf(node) {
		while (node && node !== container) {
			if (byGroup.has(node)) return byGroup.get(node);
			node = node.parentNode;
		}
		return null;
	}

	// fitLabel cuts name to fit width pixels, as the Go side does.
	function fitLabel(name, width) {
		var fit = Math.floor((width - 2 * cfg.labelInset) / cfg.charWidth);
		if (fit < cfg.minLabel) return "";
		var chars = Array.from(name);
		if (chars.length <= fit) return name;
		return chars.slice(0, fit - 2).join("") + "..";
	}

	function place(f, x, width) {
		f.rect.setAttribute("x", x.toFixed(1));
		f.rect.setAttribute("width", width.toFixed(1));
		f.text.setAttribute("x", (x + cfg.labelInset).toFixed(1));
		f.text.textContent = fitLabel(f.name, width);
	}

	function zoom(z) {
		var end = z.start + z.value;
		var scale = cfg.width / z.value;
		frames.forEach(function (f) {
			var fEnd = f.start + f.value;
			if (f.level < z.level) {
				// An ancestor spans the zoomed frame: drawn full width, dimmed.
				if (f.start <= z.start + eps && fEnd >= end - eps) {
					place(f, cfg.xpad, cfg.width);
					f.group.classList.add("ancestor");
					f.group.classList.remove("off");
				} else {
					f.group.classList.add("off");
				}
			} else if (f.start >= z.start - eps && fEnd <= end + eps) {
				// The zoomed frame and its descendants, stretched.
				place(f, cfg.xpad + (f.start - z.start) * scale, f.value * scale);
				f.group.classList.remove("ancestor", "off");
			} else {
				f.group.classList.add("off");
			}
		});
		unzoomButton.classList.remove("off");
	}

	function unzoom() {
		frames.forEach(function (f) {
			f.rect.setAttribute("x", f.x);
			f.rect.setAttribute("width", f.width);
			f.text.setAttribute("x", (Number(f.x) + cfg.labelInset).toFixed(1));
			f.text.textContent = f.label;
			f.group.classList.remove("ancestor", "off");
		});
		unzoomButton.classList.add("off");
	}

	function resetSearch() {
		frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
		searchTerm = null;
		searchButton.classList.remove("on");
		searchButton.textContent = "Search";
		matched.textContent = " ";
	}

	function search(term) {
		var re;
		try {
			re = new RegExp(term);
		} catch (err) {
			window.alert("Not a regular expression: " + err.message);
			return;
		}
		resetSearch();
		var hits = [];
		frames.forEach(function (f) {
			if (f !== root && re.test(f.name)) {
				f.rect.setAttribute("fill", cfg.matchFill);
				hits.push(f);
			}
		});
		// Samples under a matching frame, each counted once: a match inside
		// an earlier (outer) match adds nothing.
		hits.sort(function (a, b) { return a.start - b.start || b.value - a.value; });
		var sum = 0;
		var coveredTo = -Infinity;
		hits.forEach(function (f) {
			if (f.start + eps >= coveredTo) {
				sum += f.value;
				coveredTo = f.start + f.value;
			}
		});
		var pct = cfg.total > 0 ? 100 * sum / cfg.total : 0;
		searchTerm = term;
		searchButton.classList.add("on");
		searchButton.textContent = "Reset Search";
		matched.textContent = "Matched: " + (pct === 100 ? "100" : pct.toFixed(1)) + "%";
	}

	function promptSearch() {
		var term = window.prompt("Search frames (a regular expression, e.g. ^ext4_)", searchTerm || "");
		if (term) search(term);
	}

	container.addEventListener("mouseover", function (e) {
		var f = frameOf(e.target);
		if (f) details.textContent = f.group.getElementsByTagName("title")[0].textContent;
	});
	container.addEventListener("mouseout", function (e) {
		if (frameOf(e.target)) details.textContent = " ";
	});
	container.addEventListener("click", function (e) {
		var f = frameOf(e.target);
		if (!f) return;
		if (f === root) unzoom();
		else zoom(f);
	});
	unzoomButton.addEventListener("click", unzoom);
	searchButton.addEventListener("click", function () {
		if (searchTerm === null) promptSearch();
		else resetSearch();
	});
	window.addEventListener("keydown", function (e) {
		if (e.key === "F3" || ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F"))) {
			e.preventDefault();
			promptSearch();
		} else if (e.key === "Escape" && searchTerm !== null) {
			resetSearch();
		}
	});

	// For tests and embedding pages: the same actions as the mouse.
	window.flameGraph = {
		zoom: function (i) { zoom(frames[i]); },
		unzoom: unzoom,
		search: search,
		resetSearch: resetSearch
	};
})();

// A few lines of DOM building instead of a framework: h() makes an element
// with attributes, properties, listeners and children.

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

/** h builds an element. Attribute keys starting with "on" add listeners;
 * "class", "style" (a string), "dataset" (an object) and boolean or
 * string attributes are set as expected; "value"/"checked" set properties. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") {
        el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
      } else if (k === "dataset") {
        for (const [dk, dv] of Object.entries(v as Record<string, string>)) el.dataset[dk] = dv;
      } else if (k === "value" || k === "checked" || k === "selected" || k === "indeterminate") {
        (el as unknown as Record<string, unknown>)[k] = v;
      } else {
        el.setAttribute(k, v === true ? "" : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/** replace swaps el's children for new ones. */
export function replace(el: Element, ...children: Child[]) {
  el.textContent = "";
  append(el, children);
}

/** svgIcon makes a small inline icon from a path (24×24 viewBox). */
export function icon(d: string, title?: string): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", title ? "false" : "true");
  svg.classList.add("icon");
  const p = document.createElementNS(ns, "path");
  p.setAttribute("d", d);
  svg.appendChild(p);
  return svg;
}

/** debounce calls fn once calls stop for ms milliseconds. */
export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): (...a: A) => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  return (...a: A) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
}

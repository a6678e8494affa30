// Building the page without HTML: every element is made with createElement and every
// value from a trace goes in as a text node or an attribute value, never as markup.
// There is no innerHTML anywhere in these scripts; the page's Content-Security-Policy
// (require-trusted-types-for 'script') makes any such assignment throw.
"use strict";
window.SE = window.SE || {};

(function (SE) {
  const SVG_NS = "http://www.w3.org/2000/svg";

  function append(node, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }

  // props: text, class, data (dataset), on (listeners), title, and plain attributes.
  // Attribute names are ours; values may come from a trace (they stay values).
  // shown: a value from a trace, shown isolated (class "v": unicode-bidi: isolate), with
  // its control characters visible and cut to `max` characters, whole in the title (always
  // with `whole`: a cell that cuts it to its width).
  function apply(node, props) {
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || key === "max" || key === "whole") continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "shown") {
        const c = SE.cut(value, props.max);
        node.textContent = c.text;
        if (c.title !== null || props.whole) node.setAttribute("title", c.title === null ? c.text : c.title);
      } else if (key === "class") node.setAttribute("class", value);
      else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
      else if (key === "on") for (const [k, f] of Object.entries(value)) node.addEventListener(k, f);
      else if (key.startsWith("on") || key === "href" || key === "src" || key === "style") {
        throw new Error("SE.el: set " + key + " through SE.link or element.style");
      } else node.setAttribute(key, String(value));
    }
    if (props && props.shown !== undefined && props.shown !== null) node.classList.add("v");
  }

  SE.el = function (tag, props, ...kids) {
    const node = document.createElement(tag);
    apply(node, props);
    return append(node, kids);
  };

  SE.svg = function (tag, props, ...kids) {
    const node = document.createElementNS(SVG_NS, tag);
    apply(node, props);
    return append(node, kids);
  };

  // An SVG shape with a tooltip (<title> as a text node).
  SE.tip = function (node, text) {
    const title = document.createElementNS(SVG_NS, "title");
    title.textContent = String(text);
    node.appendChild(title);
    return node;
  };

  // A link inside the page: the route is ours, a run id in it is percent-encoded.
  SE.link = function (route, text, props) {
    const a = SE.el("a", props, text);
    a.setAttribute("href", SE.pathTo(route));
    return a;
  };

  SE.clear = function (node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  };

  SE.replace = function (node, ...kids) {
    SE.clear(node);
    return append(node, kids);
  };
})(window.SE);

// MathJax for pymdownx.arithmatex (generic mode); loaded by the theme when the page is read
// online; offline the formulas stay readable as TeX.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true },
  options: { ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex" }
};
document$.subscribe(() => { if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise(); });

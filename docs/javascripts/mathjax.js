// MathJax for pymdownx.arithmatex (generic mode).  MathJax itself is copied into the site by
// the docs build (docs/hooks/reference.py), so the formulas render without a network.
// The pages' formulas come wrapped by arithmatex as \( \) and \[ \]; the notebooks' Markdown
// cells and LaTeX outputs keep Jupyter's $ and $$, so those two classes are processed as well.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"], ["$", "$"]], displayMath: [["\\[", "\\]"], ["$$", "$$"]],
         processEscapes: true },
  // every element with a class is skipped with its subtree (the theme's frame, code), except
  // those three classes; unclassed children of theirs (a notebook cell's paragraphs) are read
  options: { ignoreHtmlClass: ".+", processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-RenderedLatex" }
};
document$.subscribe(() => { if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise(); });

// Typeset an HTML file with the site's MathJax configuration and the MathJax pieces the site
// ships (TeX input with its extensions loaded on demand, CommonHTML output, from the folder the
// docs build copies), in node with MathJax's own DOM (liteDOM): print how many formulas were
// found and how many failed.  (The browser loads the same pieces combined in tex-mml-chtml.js,
// which in node would also want the speech engine's XML parser.)
//   node tests/mathjax_count.js MATHJAX_ES5_DIR PAGE.html docs/javascripts/mathjax.js
const fs = require('fs');
const [es5, page, cfgfile] = process.argv.slice(2);
const m = fs.readFileSync(cfgfile, 'utf8').match(/window\.MathJax = (\{[\s\S]*?\n\});/);
const cfg = eval('(' + m[1] + ')');
global.MathJax = Object.assign(cfg, {
  loader: {paths: {mathjax: es5}, load: ['input/tex', 'output/chtml', 'adaptors/liteDOM'],
           require: require},
  startup: {typeset: false}
});
require(es5 + '/startup.js');
MathJax.startup.promise.then(() => {
  const {mathjax} = MathJax._.mathjax;
  mathjax.handlers.register(MathJax.startup.handler);
  const doc = mathjax.document(fs.readFileSync(page, 'utf8'), {
    InputJax: MathJax.startup.input, OutputJax: MathJax.startup.output,
    ignoreHtmlClass: cfg.options.ignoreHtmlClass, processHtmlClass: cfg.options.processHtmlClass});
  doc.render();
  const items = Array.from(doc.math);
  const errors = items.filter(x => JSON.stringify(MathJax.startup.adaptor.outerHTML(x.typesetRoot)).includes('merror'));
  console.log(JSON.stringify({found: items.length, errors: errors.length}));
}).catch(e => { console.log(JSON.stringify({error: e.message})); process.exit(1); });

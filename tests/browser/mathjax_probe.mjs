// What JupyterLab 4's MathJax 3 makes of output HTML: the same TeX input (every package, `require` aside,
// `$`/`\(` inline, `$$`/`\[` display, escapes and environments), the same safe extension, run in Node over
// each fragment given as JSON on stdin; prints, per fragment, the formulas found and their MathML.
import {mathjax} from 'mathjax-full/js/mathjax.js';
import {TeX} from 'mathjax-full/js/input/tex.js';
import {SVG} from 'mathjax-full/js/output/svg.js';
import {liteAdaptor} from 'mathjax-full/js/adaptors/liteAdaptor.js';
import {RegisterHTMLHandler} from 'mathjax-full/js/handlers/html.js';
import {SafeHandler} from 'mathjax-full/js/ui/safe/SafeHandler.js';
import {AllPackages} from 'mathjax-full/js/input/tex/AllPackages.js';
import {SerializedMmlVisitor} from 'mathjax-full/js/core/MmlTree/SerializedMmlVisitor.js';

const adaptor = liteAdaptor();
SafeHandler(RegisterHTMLHandler(adaptor));
const visitor = new SerializedMmlVisitor();
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const fragments = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const out = [];
for (const fragment of fragments) {
  // a fresh input jax per fragment: macros one fragment defines must not leak into the next one's result
  const tex = new TeX({
    packages: AllPackages,
    inlineMath: [['$', '$'], ['\\(', '\\)']],
    displayMath: [['$$', '$$'], ['\\[', '\\]']],
    processEscapes: true,
    processEnvironments: true,
  });
  const doc = mathjax.document(`<html><head></head><body><div>${fragment}</div></body></html>`, {InputJax: tex, OutputJax: new SVG({fontCache: 'none'})});
  let formulas = [];
  try {
    doc.findMath().compile();
    for (const item of doc.math) {
      if (item.root) formulas.push(visitor.visitTree(item.root));
    }
  } catch (err) {
    formulas = ['ERROR ' + String(err && err.message || err)];
  }
  out.push(formulas);
}
process.stdout.write(JSON.stringify(out));

// Typeset TeX into MathJax's CommonHTML with Node.js, for _ext/server_maths.py. Reads JSON on stdin:
// {"mathjax": the es5/ folder of the site's pinned MathJax, "fontURL": where the stylesheet finds MathJax's fonts,
//  "items": [[tex, display], ...]}; writes {"html": [one <mjx-container> per item], "css": MathJax's stylesheet for
// every glyph of its TeX fonts, so that one file serves every page}. Each formula carries its MathML for a screen
// reader (assistive-mml, hidden on screen), as the browser's tex-mml-chtml.js wrote it.
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
require(input.mathjax + '/node-main.js').init({
  loader: {load: ['input/tex', 'output/chtml', 'a11y/assistive-mml']},
  chtml: {fontURL: input.fontURL, adaptiveCSS: false},
}).then(MathJax => {
  const adaptor = MathJax.startup.adaptor;
  // A browser's MathJax measures the page's font and scales its own to the same x-height: in the theme's text font
  // it writes font-size: 127.3% on every formula. Node.js has no font to measure, so it is given that scale.
  const scale = 1.273;
  const html = input.items.map(([tex, display]) => adaptor.outerHTML(MathJax.tex2chtml(tex, {display, scale})));
  process.stdout.write(JSON.stringify({html, css: adaptor.textContent(MathJax.chtmlStylesheet())}));
}).catch(error => { console.error(error); process.exit(1); });

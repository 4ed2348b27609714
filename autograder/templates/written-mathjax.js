// MathJax's settings for the pages of written answers (autograder/written/pages.py), loaded before MathJax itself.
// It typesets only the elements of class "math", which hold TeX that autograder/written/markdown.py escaped;
// everything else in the page (whose body has the class "no-math") stays text. The "safe" extension filters what
// TeX could otherwise put in a page: \href to javascript:, \class, \style, \cssId.
window.MathJax = {
  loader: { load: ["ui/safe"] },
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: false,
    processEnvironments: false,
  },
  options: {
    ignoreHtmlClass: "no-math",
    processHtmlClass: "math",
    enableMenu: false,
  },
  startup: {
    pageReady: () =>
      MathJax.startup.defaultPageReady().then(() => document.body.classList.remove("no-math")),
  },
};

/* The Chinese edition's search splits a query as the index was split.
 *
 * Sphinx's index of a zh page holds jieba's words of two or more characters; its page script looks
 * a query's whole run of Chinese characters up as one term, which finds only the pages where jieba
 * kept that run whole. Here each run becomes the index's own terms it is made of, longest first
 * from the left (a character no term starts is skipped, as the index drops single characters);
 * Sphinx then finds the pages that hold every term. A run with no term of the index stays whole.
 */
(function () {
  "use strict";
  var CJK = /([\u3400-\u9fff\uf900-\ufaff]+)/u;
  var has = Object.prototype.hasOwnProperty;

  function known(term) {
    var index = window.Search && window.Search._index;
    return !!index && (has.call(index.terms || {}, term) || has.call(index.titleterms || {}, term));
  }

  function segment(run) {
    var out = [];
    for (var i = 0; i < run.length;) {
      var j = run.length;
      while (j > i + 1 && !known(run.slice(i, j))) j--;
      if (j > i + 1) { out.push(run.slice(i, j)); i = j; } else i++;
    }
    return out.length ? out : [run];
  }

  // Sphinx's own split (searchtools.js), then each Chinese run segmented
  window.splitQuery = function (query) {
    var terms = [];
    query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).forEach(function (part) {
      part.split(CJK).forEach(function (piece, k) {
        if (!piece) return;
        terms.push.apply(terms, k % 2 ? segment(piece) : [piece]);
      });
    });
    return terms;
  };
})();

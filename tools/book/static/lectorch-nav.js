/* lectorch navigation fixes for the theme (sphinx-book-theme 1.3 on pydata-sphinx-theme 0.17).
 *
 * 1. pydata-sphinx-theme 0.17 puts a second sidebar button of class `primary-toggle` (and
 *    `secondary-toggle`) in its top bar, which the book theme hides, and both themes bind their click
 *    handlers with `document.querySelector`, i.e. to that first, hidden button only: the visible ≡
 *    and ☰ of the article header do nothing (pydata-sphinx-theme issue 2451, sphinx-book-theme
 *    issue 988). Every other button of the class forwards its click to the first one, so the
 *    themes' own handlers run: the sidebar collapses on a wide screen and opens as a dialog on a
 *    phone. Should a later theme bind every button, nothing runs twice: the forwarding listener
 *    (capture phase) stops the click on the other button before the theme's own listener sees it.
 * 2. The language switch keeps the section the reader is in: both editions share the section ids
 *    (made from the English headings before the translation is applied), so the #anchor carries over.
 * 3. On a phone the sidebars open as dialogs over the page; a tap on a link to a section of this
 *    page jumps there but left the dialog ("On this page") open over the section: it closes now.
 */
(function () {
  "use strict";

  function forwardToFirst(selector) {
    var buttons = document.querySelectorAll(selector);
    for (var i = 1; i < buttons.length; i++) {
      buttons[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        buttons[0].click();
      }, true);
    }
  }

  function keepAnchorOnLanguageSwitch() {
    var links = document.querySelectorAll(".lectorch-lang-switch a");
    links.forEach(function (link) {
      link.addEventListener("click", function () {
        var base = link.getAttribute("href").split("#")[0];
        link.setAttribute("href", base + window.location.hash);
      });
    });
  }

  function closeDialogAfterJump() {
    document.addEventListener("click", function (event) {
      var link = event.target.closest && event.target.closest("dialog a[href]");
      if (!link) return;
      var url = new URL(link.href, window.location.href);
      if (url.pathname === window.location.pathname && url.hash) link.closest("dialog").close();
    });
  }

  function start() {
    closeDialogAfterJump();
    forwardToFirst(".primary-toggle");
    forwardToFirst(".secondary-toggle");
    keepAnchorOnLanguageSwitch();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

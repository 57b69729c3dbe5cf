// Figures a phone can read: each figure of a chapter is a link to its image (open it in a tab and
// zoom with the fingers), and a click or tap shows it enlarged over the page, scrollable, until the
// next tap or Escape. No library, nothing fetched but the image the page already shows.
(function () {
  "use strict";
  function close(overlay, opener) {
    overlay.remove();
    document.body.classList.remove("lectorch-zoomed");
    if (opener) opener.focus();
  }
  function open(link, img) {
    var overlay = document.createElement("div");
    overlay.className = "lectorch-zoom";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", img.alt);
    overlay.tabIndex = -1;
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    // twice the width it has in the page, at least the screen's width
    big.style.width = Math.max(window.innerWidth - 16, 2 * img.getBoundingClientRect().width) + "px";
    overlay.appendChild(big);
    overlay.addEventListener("click", function () { close(overlay, link); });
    overlay.addEventListener("keydown", function (e) { if (e.key === "Escape") close(overlay, link); });
    document.body.appendChild(overlay);
    document.body.classList.add("lectorch-zoomed");
    overlay.focus();
  }
  function init() {
    document.querySelectorAll(".cell_output figure img, .cell_output img.lectorch-figure").forEach(function (img) {
      if (img.closest("a, .lectorch-panel")) return;
      var link = document.createElement("a");
      link.href = img.getAttribute("src");
      link.className = "lectorch-figure-link";
      img.parentNode.insertBefore(link, img);
      link.appendChild(img);
      link.addEventListener("click", function (e) {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;  // a new tab: the browser's
        e.preventDefault();
        open(link, img);
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

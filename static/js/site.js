// Behaviour every page may use, kept out of the markup: the Content-Security-Policy allows no inline scripts
// or event handlers (portal/settings.py, CONTENT_SECURITY_POLICY).
// <select data-autosubmit> submits its form when changed.
document.addEventListener("change", function (event) {
  var el = event.target;
  if (el && el.hasAttribute && el.hasAttribute("data-autosubmit") && el.form) { el.form.submit(); }
});
// <form data-confirm="question"> asks before it is sent (cancelling a submission, for one).
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (form && form.hasAttribute && form.hasAttribute("data-confirm") && !window.confirm(form.getAttribute("data-confirm"))) {
    event.preventDefault();
  }
});

// Behaviour every page may use, kept out of the markup: the Content-Security-Policy allows no inline scripts
// or event handlers (portal/settings.py, CONTENT_SECURITY_POLICY).
// <select data-autosubmit> submits its form when changed.
document.addEventListener("change", function (event) {
  var el = event.target;
  if (el && el.hasAttribute && el.hasAttribute("data-autosubmit") && el.form) { el.form.submit(); }
});

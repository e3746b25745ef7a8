// Send the finished HIT on to MTurk (turkSubmitTo + "/mturk/externalSubmit"); the button is the fallback.
document.addEventListener("DOMContentLoaded", function () {
  var form = document.getElementById("mturk-submit-form");
  if (form) form.submit();
});

// A new task's time zone starts as UTC on the server; here it becomes the browser's own zone (the one its user
// reads clocks in), as long as the field was not changed. Without JavaScript the field keeps UTC.
const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
if (zone) {
  for (const input of document.querySelectorAll('input[data-browser-zone]')) {
    if (input.value === input.defaultValue) input.value = zone;
  }
}

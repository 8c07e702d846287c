// Long work started by a form (a test run of a tool, whose first Python run loads Python for about 10 s): once a
// `<form data-busy="…">` is sent, its submit buttons are disabled and its `[data-busy-status]` says what is under
// way, so the wait reads as work rather than a page that hangs. Without JavaScript the form simply posts.
for (const form of document.querySelectorAll('form[data-busy]')) {
  form.addEventListener('submit', () => {
    const status = form.querySelector('[data-busy-status]');
    if (status) {
      status.textContent = form.dataset.busy ?? '';
      status.hidden = false;
    }
    form.setAttribute('aria-busy', 'true');
    // After the submission has started: a disabled button in the submit event would cancel it.
    setTimeout(() => {
      for (const button of form.querySelectorAll('button[type=submit]')) button.disabled = true;
    });
  });
}

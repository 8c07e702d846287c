// Copy buttons (`<button data-copy="ID" hidden>`): shown once this runs, each copies the text of the element
// with that id to the clipboard and says so on the button. Without JavaScript the buttons stay hidden and the
// text can be selected by hand.
for (const button of document.querySelectorAll('button[data-copy]')) {
  const label = button.textContent;
  button.hidden = false;
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.dataset.copy ?? '');
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source.textContent ?? '');
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Select and copy by hand';
    }
    setTimeout(() => {
      button.textContent = label;
    }, 2000);
  });
}

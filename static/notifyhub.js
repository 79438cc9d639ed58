// Copy buttons: the pages work without this script; with it, a secret or a link is one click from the clipboard.
document.querySelectorAll("[data-copy]").forEach((button) => {
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", async () => {
    // A read-only field holds its text in its value; a code element in its content.
    const text = source instanceof HTMLTextAreaElement ? source.value : source.textContent;
    await navigator.clipboard.writeText(text.trim());
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});

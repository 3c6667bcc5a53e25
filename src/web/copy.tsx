/**
 * Copy buttons (issue 30): a button that copies the text of the element it names (an input's
 * value, a command's text). The pages' Content-Security-Policy allows scripts only with the
 * answer's nonce (src/web/security.ts), so the behaviour is one static file, /assets/copy.js,
 * loaded by a `<script nonce>` beside the buttons; nothing inline. Without JavaScript the buttons
 * stay hidden (they would do nothing) and the text is still there to select.
 */
import type { FC } from "hono/jsx";
import type { WebPaths } from "./env";

/**
 * The script: binds every `button[data-copy]` once per page (several components may each bring
 * the tag), shows the buttons, copies with the Clipboard API, and where that is refused (an http
 * origin other than localhost, a denied permission) selects the text for Ctrl+C instead. The
 * outcome is said in the button's status region, which screen readers announce.
 */
export const COPY_JS = `"use strict";
(() => {
  const root = document.documentElement;
  if (root.dataset.copyReady === "1") return;
  root.dataset.copyReady = "1";
  const say = (button, text) => {
    const status = document.getElementById(button.dataset.copy + "-copy-status");
    if (status) status.textContent = text;
  };
  const select = (target) => {
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      target.focus();
      target.select();
      return;
    }
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  };
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const target = document.getElementById(button.dataset.copy);
      if (!target) return;
      const text = "value" in target && typeof target.value === "string" ? target.value : target.textContent;
      try {
        await navigator.clipboard.writeText(text);
        say(button, "Copied.");
      } catch {
        select(target);
        say(button, "Selected: press Ctrl+C (⌘C) to copy.");
      }
    });
  }
})();
`;

/** The button for the element `target` (its id), with its status region; hidden until the script shows it. */
export const CopyButton: FC<{ target: string; label?: string; what: string }> = ({ target, label = "Copy", what }) => (
  <span class="copy">
    <button type="button" class="copy-button" data-copy={target} aria-label={`Copy ${what}`} hidden>
      {label}
    </button>
    <span class="copy-status muted" id={`${target}-copy-status`} role="status" />
  </span>
);

/** The script tag of the copy buttons, with the answer's CSP nonce (`c.get("secureHeadersNonce")`). */
export const CopyScript: FC<{ nonce: string | undefined; paths: WebPaths }> = ({ nonce, paths }) =>
  nonce ? <script nonce={nonce} src={paths.to("/assets/copy.js")} defer /> : null;

// Sign-in with an API key. The key is checked with a one-row search (read
// scope) before it is kept; the current URL stays, so a permalink opens
// straight to its view once signed in.

import { clientsWithKey, problem, saveKey } from "../api";
import { h } from "../dom";
import type { Page } from "./page";

export function signInPage(onSignedIn: () => void, message?: string): Page {
  const key = h("input", {
    type: "password",
    id: "api-key",
    name: "api-key",
    autocomplete: "current-password",
    spellcheck: "false",
    placeholder: "fsk_…",
    required: true,
    "data-testid": "api-key",
  });
  const show = h("button", { type: "button", class: "ghost small", "aria-pressed": "false", onclick: () => toggle() }, "Show");
  const remember = h("input", { type: "checkbox", id: "remember", "data-testid": "remember" });
  const error = h("div", { class: "field-error", role: "alert", "data-testid": "signin-error" }, message ?? "");
  const submit = h("button", { type: "submit", class: "primary wide", "data-testid": "signin" }, "Sign in");
  const ctrl = new AbortController();

  function toggle() {
    const visible = key.type === "password";
    key.type = visible ? "text" : "password";
    show.textContent = visible ? "Hide" : "Show";
    show.setAttribute("aria-pressed", String(visible));
  }

  const form = h(
    "form",
    {
      class: "signin-card",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const k = key.value.trim();
        if (!k) {
          error.textContent = "Paste an API key.";
          return;
        }
        submit.disabled = true;
        submit.textContent = "Checking…";
        error.textContent = "";
        try {
          await (await clientsWithKey(k)).query.searchProfiles({ pageSize: 1 }, { signal: ctrl.signal });
          saveKey(k, remember.checked);
          onSignedIn();
        } catch (err) {
          const p = problem(err);
          error.textContent =
            p.kind === "unauthenticated"
              ? "That key was not accepted. Check it, or ask for a new one (fleetscope key create)."
              : p.kind === "forbidden"
                ? "This key cannot read profiles: it lacks the read scope."
                : p.kind === "down"
                  ? "The server cannot be reached. Is it running?"
                  : p.message;
        } finally {
          submit.disabled = false;
          submit.textContent = "Sign in";
        }
      },
    },
    h("div", { class: "brand big" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "fleetscope"),
    h("p", { class: "muted" }, "Sub-second profiles of your fleet. Sign in with an API key of your tenant."),
    h("label", { for: "api-key" }, "API key"),
    h("div", { class: "key-row" }, key, show),
    h("label", { class: "check" }, remember, " Remember me on this device"),
    error,
    submit,
    h("p", { class: "muted small" }, "The key stays in this browser (this tab only, unless remembered) and is sent to this server only."),
  );
  return {
    el: h("div", { class: "page signin-page" }, form),
    title: "Sign in",
    destroy: () => ctrl.abort(),
    focus: () => key.focus(),
  };
}

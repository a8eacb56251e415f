// Upload by drag and drop (or a file picker): the file goes to
// IngestService.UploadFile with the app, host and labels typed beside the
// drop zone, with a progress bar while it is read, sent and processed.

import { problem, uploadFile, type UploadPhase } from "../api";
import { h, replace } from "../dom";
import { formatBytes, formatCount, formatLabels, profileDuration } from "../format";
import type { Duplicate } from "../gen/fleetscope/v1/ingest_pb";
import { navigate } from "../router";
import { parseFilters } from "../searchquery";
import { onUnauthenticated } from "./states";

/** duplicateNote says what an upload of bytes already stored is stored as,
 * and which of the metadata typed was not applied (the stored profile keeps
 * its first upload's; an admin changes it). */
function duplicateNote(d: Duplicate): HTMLElement {
  const stored = `app=${d.app}, host=${d.host || "(none)"}, labels ${formatLabels(d.labels) || "(none)"}`;
  return h(
    "div",
    { class: d.ignored.length ? "upload-duplicate warn" : "upload-duplicate", "data-testid": "upload-duplicate", "data-ignored": d.ignored.join(",") },
    `Stored before as ${stored}`,
    d.ignored.length
      ? [`: this upload's ${d.ignored.join(", ")} not applied. An admin changes the stored metadata with `, h("code", null, `fleetscope admin update-profile ${d.profileId}`), "."]
      : ".",
  );
}

export function uploadPanel(defaultApp: () => string | false, onUploaded: () => void): { el: HTMLElement; destroy(): void } {
  const ctrl = new AbortController();
  const app = h("input", { type: "text", name: "app", placeholder: "checkout", required: true, "data-testid": "upload-app", autocomplete: "off" });
  const host = h("input", { type: "text", name: "host", placeholder: "web-1", "data-testid": "upload-host", autocomplete: "off" });
  const labels = h("input", { type: "text", name: "labels", placeholder: "env=prod region=eu", "data-testid": "upload-labels", autocomplete: "off" });
  const picker = h("input", { type: "file", class: "visually-hidden", "data-testid": "upload-file", tabindex: "-1" });
  const status = h("div", { class: "upload-status", "aria-live": "polite", "data-testid": "upload-status" });
  const zone = h(
    "div",
    { class: "dropzone", "data-testid": "dropzone", tabindex: "0", role: "button", "aria-label": "Drop a profile file here, or press Enter to choose one" },
    h("div", { class: "dropzone-title" }, "Drop a profile here"),
    // The formats the server recognises by their content (ingest/).
    h(
      "div",
      { class: "muted" },
      "perf script (",
      h("code", null, "perf script --header"),
      "), nflxprofile, V8 .cpuprofile, Chrome trace events, pprof or folded stacks; plain or gzip — or ",
      h("span", { class: "linkish" }, "choose a file"),
    ),
  );
  const el = h(
    "section",
    { class: "upload", "aria-labelledby": "upload-title" },
    h("h2", { id: "upload-title" }, "Upload"),
    h(
      "div",
      { class: "upload-fields" },
      h("label", null, h("span", null, "App ", h("span", { class: "req", "aria-hidden": "true" }, "*")), app),
      h("label", null, h("span", null, "Host"), host),
      h("label", null, h("span", null, "Labels"), labels),
    ),
    zone,
    picker,
    status,
  );

  zone.addEventListener("click", () => picker.click());
  zone.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      picker.click();
    }
  });
  picker.addEventListener("change", () => {
    if (picker.files?.[0]) start(picker.files[0]);
    picker.value = "";
  });
  let depth = 0;
  zone.addEventListener("dragenter", (e) => {
    e.preventDefault();
    depth++;
    zone.classList.add("over");
  });
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
  });
  zone.addEventListener("dragleave", () => {
    if (--depth <= 0) {
      depth = 0;
      zone.classList.remove("over");
    }
  });
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    e.stopPropagation();
    overlay.hidden = true;
    winDepth = 0;
    depth = 0;
    zone.classList.remove("over");
    const f = e.dataTransfer?.files?.[0];
    if (f) start(f);
  });
  // A file dropped anywhere on the page is uploaded too (not opened by the
  // browser); an overlay says so while a file is dragged over the page.
  const overlay = h("div", { class: "drop-overlay", hidden: true, "aria-hidden": "true" }, h("div", null, "Drop to upload"));
  document.body.appendChild(overlay);
  let winDepth = 0;
  const hasFiles = (e: DragEvent) => !!e.dataTransfer?.types.includes("Files");
  const onWinEnter = (e: DragEvent) => {
    if (!hasFiles(e)) return;
    winDepth++;
    overlay.hidden = zone.contains(e.target as Node);
  };
  const onWinLeave = (e: DragEvent) => {
    if (!hasFiles(e)) return;
    if (--winDepth <= 0) {
      winDepth = 0;
      overlay.hidden = true;
    }
  };
  const onWinOver = (e: DragEvent) => {
    if (hasFiles(e)) e.preventDefault();
  };
  const onWinDrop = (e: DragEvent) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    winDepth = 0;
    overlay.hidden = true;
    const f = e.dataTransfer?.files?.[0];
    if (f && !zone.contains(e.target as Node)) {
      el.scrollIntoView({ behavior: "smooth", block: "nearest" });
      start(f);
    }
  };
  window.addEventListener("dragenter", onWinEnter);
  window.addEventListener("dragleave", onWinLeave);
  window.addEventListener("dragover", onWinOver);
  window.addEventListener("drop", onWinDrop);

  let busy = false;
  async function start(file: File) {
    if (busy) return;
    if (!app.value.trim()) {
      const guess = defaultApp();
      if (guess) app.value = guess;
    }
    if (!app.value.trim()) {
      replace(status, h("div", { class: "field-error", role: "alert" }, "Name the app first: profiles are searched by app."));
      app.focus();
      return;
    }
    const parsed = parseFilters(labels.value);
    const labelMap = parsed.filters.labels;
    if (parsed.filters.app || parsed.filters.host) {
      replace(status, h("div", { class: "field-error", role: "alert" }, "Labels are key=value pairs separated by spaces."));
      return;
    }
    busy = true;
    zone.classList.add("busy");
    const bar = h("progress", { max: "100", value: "0", "data-testid": "upload-progress" });
    const text = h("span", null, "Reading…");
    replace(status, h("div", { class: "upload-file" }, h("b", null, file.name), ` · ${formatBytes(file.size)}`), bar, text);
    const t0 = performance.now();
    const phaseText: Record<UploadPhase, string> = { reading: "Reading…", compressing: "Compressing…", sending: "Sending", processing: "Processing on the server…" };
    try {
      const res = await uploadFile(
        file,
        { app: app.value.trim(), host: host.value.trim(), labels: labelMap, filename: file.name },
        (phase, f) => {
          bar.value = phase === "sending" ? Math.round(f * 100) : phase === "processing" ? 100 : bar.value;
          if (phase === "processing") bar.removeAttribute("value"); // indeterminate while the server parses
          text.textContent = phase === "sending" ? `${phaseText[phase]} ${Math.round(f * 100)}%` : phaseText[phase];
          status.dataset.phase = phase;
        },
        ctrl.signal,
      );
      const p = res.profile!;
      const span = profileDuration(p);
      const href = `/p/${encodeURIComponent(p.id)}`;
      status.dataset.phase = "done";
      replace(
        status,
        h(
          "div",
          { class: "upload-done", "data-testid": "upload-done", "data-profile-id": p.id },
          h("span", { class: "ok" }, res.created ? "Uploaded" : "Already stored"),
          ` ${file.name}: ${formatCount(p.samples)} samples${span ? ` over ${span}` : ""} in ${((performance.now() - t0) / 1000).toFixed(1)} s. `,
          h("a", { href, "data-testid": "upload-link", onclick: (e: MouseEvent) => (e.preventDefault(), navigate(href)) }, "Open profile →"),
          res.duplicate ? duplicateNote(res.duplicate) : null,
          h("div", { class: "muted small mono" }, res.permalink),
        ),
      );
      onUploaded();
    } catch (err) {
      if (ctrl.signal.aborted) return;
      const pr = problem(err);
      if (pr.kind === "unauthenticated") return onUnauthenticated();
      status.dataset.phase = "error";
      const msg =
        pr.kind === "forbidden"
          ? "This API key cannot upload (it lacks the ingest scope)."
          : pr.kind === "toolarge"
            ? `Too large for a browser upload: ${pr.message}. Use the CLI (fleetscope upload), which streams any size.`
            : pr.kind === "down"
              ? "The server cannot be reached."
              : pr.message;
      replace(status, h("div", { class: "field-error", role: "alert", "data-testid": "upload-error" }, `Upload failed: ${msg}`));
    } finally {
      busy = false;
      zone.classList.remove("busy");
    }
  }

  return {
    el,
    destroy() {
      ctrl.abort();
      overlay.remove();
      window.removeEventListener("dragenter", onWinEnter);
      window.removeEventListener("dragleave", onWinLeave);
      window.removeEventListener("dragover", onWinOver);
      window.removeEventListener("drop", onWinDrop);
    },
  };
}

// The API key's storage. The key lives under "fleetscope.apiKey" in
// sessionStorage, or in localStorage when the user ticks "remember me"; it
// is read from either (a contract that tests rely on to preset it, and that
// index.html's heatmap prefetch reads too).

export const KEY_NAME = "fleetscope.apiKey";

/** apiKey is the stored key, from sessionStorage or else localStorage. */
export function apiKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_NAME) || localStorage.getItem(KEY_NAME) || null;
  } catch {
    return null;
  }
}

/** keyRemembered says whether the key is kept on this device rather than
 * for this tab: saveKey keeps it in one of the two, so a key in
 * sessionStorage is the tab's, and localStorage, whose first read waits
 * for the browser, need not be read for it. */
export function keyRemembered(): boolean {
  try {
    return !sessionStorage.getItem(KEY_NAME) && !!localStorage.getItem(KEY_NAME);
  } catch {
    return false;
  }
}

/** saveKey keeps the key for this tab, or on this device when remember. */
export function saveKey(key: string, remember: boolean) {
  clearKey();
  (remember ? localStorage : sessionStorage).setItem(KEY_NAME, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY_NAME);
  localStorage.removeItem(KEY_NAME);
}

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

/** saveKey keeps the key for this tab, or on this device when remember. */
export function saveKey(key: string, remember: boolean) {
  clearKey();
  (remember ? localStorage : sessionStorage).setItem(KEY_NAME, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY_NAME);
  localStorage.removeItem(KEY_NAME);
}

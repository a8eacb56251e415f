/** Page is what a route renders: an element, a title, and a way to stop
 * its requests and listeners when the user leaves. */
export interface Page {
  el: HTMLElement;
  title: string;
  destroy(): void;
  focus?(): void;
}

import { expect, test } from "vitest";
import { formatFilters, parseFilters, type Filters } from "./searchquery";

test("search box text", () => {
  expect(parseFilters("checkout").filters).toEqual({ app: "checkout", host: "", labels: {} });
  expect(parseFilters("  app:checkout host:web-1 env=prod  region=eu ").filters).toEqual({ app: "checkout", host: "web-1", labels: { env: "prod", region: "eu" } });
  expect(parseFilters('host:"web 1" team="a b"').filters).toEqual({ app: "", host: "web 1", labels: { team: "a b" } });
  expect(parseFilters("a b").error).toMatch(/one app name/);
  expect(parseFilters("").filters).toEqual({ app: "", host: "", labels: {} });
});

test("filters round-trip through the box", () => {
  const cases: Filters[] = [
    { app: "checkout", host: "", labels: {} },
    { app: "my app", host: "h:1", labels: { env: "prod", "k.x": "v w" } },
    { app: "a=b", host: "", labels: {} },
    { app: "", host: "", labels: { quote: 'say "hi"' } },
  ];
  for (const f of cases) {
    expect(parseFilters(formatFilters(f)).filters).toEqual(f);
  }
});

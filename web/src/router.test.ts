import { expect, test } from "vitest";
import { parseRoute } from "./router";

test("routes", () => {
  expect(parseRoute({ pathname: "/", search: "?app=x" })).toMatchObject({ name: "search" });
  const r = parseRoute({ pathname: "/p/6f0c-1", search: "?start=2.4&end=2.48" });
  expect(r).toMatchObject({ name: "profile", id: "6f0c-1" });
  if (r.name === "profile") expect(r.params.get("end")).toBe("2.48");
  expect(parseRoute({ pathname: "/p/abc/", search: "" })).toMatchObject({ name: "profile", id: "abc" });
  expect(parseRoute({ pathname: "/nope", search: "" })).toMatchObject({ name: "notfound" });
  const f = parseRoute({ pathname: "/fleet/", search: "?app=checkout&host=a&host=b" });
  expect(f).toMatchObject({ name: "fleet" });
  if (f.name === "fleet") expect(f.params.getAll("host")).toEqual(["a", "b"]);
  expect(parseRoute({ pathname: "/fleet/x", search: "" })).toMatchObject({ name: "notfound" });
  const sh = parseRoute({ pathname: "/s/fss_abc123", search: "?orient=flame" });
  expect(sh).toMatchObject({ name: "shared", token: "fss_abc123" });
  if (sh.name === "shared") expect(sh.params.get("orient")).toBe("flame");
  expect(parseRoute({ pathname: "/s/", search: "" })).toMatchObject({ name: "notfound" });
  // The benchmark page is not part of the app (a separate build entry).
  expect(parseRoute({ pathname: "/_bench/flame", search: "?nodes=10" })).toMatchObject({ name: "notfound" });
});

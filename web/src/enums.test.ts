import { describe, expect, it } from "vitest";
import * as gen from "./gen/fleetscope/v1/query_pb";
import { FlameGraphFormat, SeriesKey } from "./enums";

describe("enums", () => {
  it("equal the generated enums", () => {
    for (const [name, v] of Object.entries(FlameGraphFormat)) expect(v, name).toBe(gen.FlameGraphFormat[name as keyof typeof gen.FlameGraphFormat]);
    for (const [name, v] of Object.entries(SeriesKey)) expect(v, name).toBe(gen.SeriesKey[name as keyof typeof gen.SeriesKey]);
    // every generated value but UNSPECIFIED is here
    expect(Object.keys(FlameGraphFormat).length).toBe(Object.keys(gen.FlameGraphFormat).filter((k) => isNaN(Number(k)) && k !== "UNSPECIFIED").length);
    expect(Object.keys(SeriesKey).length).toBe(Object.keys(gen.SeriesKey).filter((k) => isNaN(Number(k)) && k !== "UNSPECIFIED").length);
  });
});

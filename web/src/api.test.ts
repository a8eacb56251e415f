import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { CallError, ERROR_CODE_HEADER, problem } from "./api";

test("problems are sorted by the server's own code, then the Connect code", () => {
  const withCode = (code: Code, fs?: string) => new ConnectError("m", code, fs ? new Headers({ [ERROR_CODE_HEADER]: fs }) : undefined);
  // ResourceExhausted is a size limit or a rate limit: the header tells
  expect(problem(withCode(Code.ResourceExhausted, "rate_limited")).kind).toBe("busy");
  expect(problem(withCode(Code.ResourceExhausted, "too_large")).kind).toBe("toolarge");
  expect(problem(withCode(Code.ResourceExhausted)).kind).toBe("toolarge");
  expect(problem(withCode(Code.InvalidArgument, "empty")).kind).toBe("invalid");
  expect(problem(withCode(Code.NotFound, "not_found")).kind).toBe("notfound");
  expect(problem(withCode(Code.Unavailable, "unavailable")).kind).toBe("down");
  // the calls made by hand carry it too
  expect(problem(new CallError("slow down", Code.ResourceExhausted, undefined, "rate_limited"))).toEqual({ kind: "busy", message: "slow down" });
  expect(problem(new CallError("big", Code.ResourceExhausted)).kind).toBe("toolarge");
});

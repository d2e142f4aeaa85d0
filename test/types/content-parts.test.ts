import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { ContentPart, ContentPartSchema, ImagePart, Message, PartsContent, ToolMessage, UserMessage } from "../../index.js";
import type { PartsContent as ReactPartsContent } from "../../react.js";
import type { UseAgentResult } from "../../react.js";

/** Content parts are written once, as the schema in actors/messages.ts: every public name is its type. */
describe("content part types", () => {
  it("ContentPart is the inferred type of ContentPartSchema; a user turn's and a tool result's content is text or parts", () => {
    expectTypeOf<ContentPart>().toEqualTypeOf<z.infer<typeof ContentPartSchema>>();
    expectTypeOf<PartsContent>().toEqualTypeOf<string | ContentPart[]>();
    expectTypeOf<UserMessage["content"]>().toEqualTypeOf<PartsContent>();
    expectTypeOf<ToolMessage["content"]>().toEqualTypeOf<PartsContent>();
    expectTypeOf<Extract<Message, { role: "system" }>["content"]>().toEqualTypeOf<string>();
    expectTypeOf<ReactPartsContent>().toEqualTypeOf<PartsContent>();
  });

  it("an image names its source in one of three fields; a page starts a run with text or parts", () => {
    expectTypeOf<ImagePart["data"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ImagePart["blob"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Parameters<UseAgentResult["start"]>[0]>().toEqualTypeOf<PartsContent>();
  });
});

import type { ContentPart, PartsContent } from "../../../index.js";

/** Where the browser can load a part from: its URL, or its bytes as a data: URL. */
function sourceOf(part: Exclude<ContentPart, { type: "text" }>): string | undefined {
  if (part.url !== undefined) return part.url;
  if (part.data !== undefined) return `data:${part.mediaType ?? "application/octet-stream"};base64,${part.data}`;
  return undefined;
}

/** A message's content: its text, its images shown, its files named. */
export function MessageContent({ content }: { content: PartsContent }) {
  if (typeof content === "string") return <>{content}</>;
  return (
    <>
      {content.map((part, index) => {
        if (part.type === "text") return <p key={index}>{part.text}</p>;
        const src = sourceOf(part);
        if (part.type === "image" && src !== undefined) return <img key={index} className="part-image" data-testid="message-image" src={src} alt="attached image" />;
        const name = part.type === "file" ? (part.filename ?? part.mediaType) : (part.mediaType ?? "image");
        return (
          <div key={index} className="part-file" data-testid="message-file">
            📎 {name}
          </div>
        );
      })}
    </>
  );
}

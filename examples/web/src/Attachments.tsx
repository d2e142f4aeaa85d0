import type { ImagePart } from "../../../index.js";

/** A picked file as an image part: its bytes as base64 with their media type (read in the browser). */
export function readImage(file: File): Promise<ImagePart> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`));
    reader.onload = () => {
      const url = String(reader.result);
      resolve({ type: "image", data: url.slice(url.indexOf(",") + 1), mediaType: file.type || "image/png" });
    };
    reader.readAsDataURL(file);
  });
}

/** The images picked to go with the next message: a button to pick more, a preview of each with a remove button. */
export function Attachments({ images, onChange }: { images: ImagePart[]; onChange: (images: ImagePart[]) => void }) {
  return (
    <div className="attachments">
      <label className="attach secondary">
        Attach image
        <input
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          multiple
          data-testid="attach"
          onChange={(event) => {
            const files = [...(event.target.files ?? [])];
            event.target.value = "";
            void Promise.all(files.map(readImage)).then((read) => onChange([...images, ...read]));
          }}
        />
      </label>
      {images.map((image, index) => (
        <span key={index} className="attachment" data-testid="attachment">
          <img src={`data:${image.mediaType};base64,${image.data}`} alt="to send" />
          <button type="button" className="secondary" onClick={() => onChange(images.filter((_, i) => i !== index))} aria-label="remove image">
            ×
          </button>
        </span>
      ))}
    </div>
  );
}

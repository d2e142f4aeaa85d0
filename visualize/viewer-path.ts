/** Where `jianmu view run.jsonl` writes by default: the same name with `.html` ("run.html"). */
export function defaultViewerPath(recordingPath: string): string {
  return /\.jsonl?$/i.test(recordingPath) ? recordingPath.replace(/\.jsonl?$/i, ".html") : `${recordingPath}.html`;
}

import type { InspectionEvent, Observer } from "xstate";

/** Pass several inspection observers where XState takes one (e.g. a recorder and an inspector). */
export function combineInspectors(...observers: (Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined)[]): Observer<InspectionEvent> {
  const targets = observers.filter((o): o is Observer<InspectionEvent> | ((event: InspectionEvent) => void) => o !== undefined);
  return {
    next: (event) => {
      for (const target of targets) {
        if (typeof target === "function") target(event);
        else target.next?.(event);
      }
    },
  };
}

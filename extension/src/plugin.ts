// The JupyterLab plugin that makes a reopened notebook show its flowlab views (docs/notebook-outputs.md).
// ipywidgets ranks its widget renderer at -10 in each notebook's rendermime, above flowlab's mime renderer (50), and
// a %%flowjob output carries both; with no live widget model (a fresh kernel, no kernel) ipywidgets then shows
// "Error displaying widget: model not found" or "Loading widget..." where the saved payload would draw. So each
// notebook gets flowlab's renderer at RANK, above ipywidgets', and that renderer hosts the widget when it is live.
// Only `app.docRegistry` is used, through the small interfaces below: no JupyterLab package is bundled or required.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { OutputRenderer, type WidgetHost } from "./output.js";
import { MIME_TYPES } from "./payload.js";
import { WIDGET_MIME } from "./saved.js";

export const RANK = -20;  // ipywidgets' widget-view renderer is at -10; a lower rank wins

interface Registry {
  addFactory(factory: IRenderMime.IRendererFactory, rank?: number): void;
  getFactory(mimeType: string): IRenderMime.IRendererFactory | undefined;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
}
interface NotebookPanel { content: { rendermime: Registry } }
interface Context { sessionContext: { ready: Promise<void> } }
interface App {
  docRegistry: { addWidgetExtension(widgetName: string, extension: { createNew(panel: NotebookPanel, context: Context): void }): unknown };
}

/** The notebook's widget renderer, once ipywidgets' manager replaced the placeholder its rendermime was cloned with
 * (it does so when the kernel session is ready, and never when the notebook has no kernel). */
export class NotebookWidgets implements WidgetHost {
  private readonly placeholder: IRenderMime.IRendererFactory | undefined;

  constructor(private readonly registry: Registry, private readonly ready: Promise<void>,
              private readonly waits: number[] = [0, 100, 500, 2000]) {
    this.placeholder = registry.getFactory(WIDGET_MIME);
  }

  private bound(): boolean {
    const f = this.registry.getFactory(WIDGET_MIME);
    return f !== undefined && f !== this.placeholder;
  }

  create(): IRenderMime.IRenderer | null {
    return this.bound() ? this.registry.createRenderer(WIDGET_MIME) : null;
  }

  async whenReady(): Promise<boolean> {
    try { await this.ready; } catch { return false; }
    // the manager binds a few promise steps after `ready` (it reads the kernel's id first)
    for (const ms of this.waits) {
      if (this.bound()) return true;
      await new Promise((r) => setTimeout(r, ms));
    }
    return this.bound();
  }
}

/** Adds flowlab's renderer, bound to this notebook's widgets, to a notebook's own rendermime. */
export function registerNotebook(panel: NotebookPanel, context: Context): void {
  const registry = panel.content.rendermime;
  const host = new NotebookWidgets(registry, context.sessionContext.ready);
  registry.addFactory({
    safe: true,  // nothing from a payload is inserted as HTML; a widget is hosted only for trusted outputs
    mimeTypes: Object.values(MIME_TYPES),
    defaultRank: RANK,
    createRenderer: () => new OutputRenderer(host),
  }, RANK);
}

const plugin = {
  id: "flowlab:notebook-outputs",
  description: "flowlab's views in notebooks, saved or live: above the widget renderer, handing over to a live widget",
  autoStart: true,
  activate: (app: App): void => {
    app.docRegistry.addWidgetExtension("Notebook", { createNew: registerNotebook });
  },
};

export default plugin;

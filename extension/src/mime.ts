// The JupyterLab 4 mime renderer: a saved notebook's flowlab outputs draw without a kernel.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { MIME_TYPES } from "./payload.js";
import { renderPayload, type Rendered } from "./views.js";

class FlowlabRenderer extends Widget implements IRenderMime.IRenderer {
  private view: Rendered | null = null;

  constructor(private readonly mimeType: string) {
    super();
    this.addClass("flowlab-mime");
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.view?.destroy();
    const text = model.data["text/plain"];
    this.view = renderPayload(this.node, model.data[this.mimeType], typeof text === "string" ? text : undefined);
    return this.view.graph ? this.view.graph.ready : Promise.resolve();
  }

  protected onBeforeDetach(): void { this.view?.destroy(); }
}

const mimeTypes = Object.values(MIME_TYPES);

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,  // nothing from the payload is ever inserted as HTML
  mimeTypes,
  defaultRank: 50,
  createRenderer: (options) => new FlowlabRenderer(options.mimeType),
};

const extension: IRenderMime.IExtension = {
  id: "flowlab:mime",
  rendererFactory,
  rank: 50,
  dataType: "json",
  fileTypes: [],
  documentWidgetFactoryOptions: [],
};

export default extension;

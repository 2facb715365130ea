// The JupyterLab 4 mime renderer: a saved notebook's flowlab outputs draw without a kernel. In a notebook, plugin.ts
// puts the same renderer above ipywidgets' (so that it can hand over to a live widget); here, the application-wide
// registration (consoles, output views) draws the saved payloads only.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { OutputRenderer } from "./output.js";
import { MIME_TYPES } from "./payload.js";

const mimeTypes = Object.values(MIME_TYPES);

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,  // nothing from the payload is ever inserted as HTML
  mimeTypes,
  defaultRank: 50,
  createRenderer: () => new OutputRenderer(),
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

// Swagger UI over this server's own OpenAPI document. No validator badge: it would
// send the document to a public validator, and the page's policy allows this origin only.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});

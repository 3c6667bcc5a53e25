// Starts the API reference of /docs with the configuration the page carries in a JSON script
// element: the page runs no inline script, so its Content-Security-Policy can forbid them. The mount
// point is not `#api-reference`, which the bundle would also mount by itself, without this configuration.
const configuration = JSON.parse(document.getElementById("reference-configuration").textContent);
window.Scalar.createApiReference("#reference", configuration);

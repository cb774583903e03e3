// Package forward is the `openai` engine kind: a model served by another OpenAI-compatible
// server (vLLM, SGLang, llama-server, Ollama's /v1, another superfluid) at a base URL.
//
// Engine is a core.RequestEngine: it turns the core's typed requests into OpenAI JSON, always
// streams from the upstream (with usage included) and relays the deltas as llm.Events as they
// arrive. Model is the small llm.Engine beside it (Info, a Tokenize that refuses); NewModel
// builds the core.Model with both. Proxy relays any other route as is. Every fault of the
// upstream (refused, 5xx, stalled, malformed, cut) becomes a 502 upstream_error; its 4xx are
// passed on.
//
// Forwarding loops: each server has an instance id (via.go). A forwarder sends
// X-Superfluid-Via with the ids the request already passed through plus its own, a server
// refuses a request whose Via holds its own id (508 forwarding_loop), and every reply names
// the server in X-Superfluid-Instance, so an engine pointed at its own server is refused when
// it is made. The package has no gin: the router's middleware (server/via.go) uses its helpers.
package forward

// Package ollama is the Ollama dialect: "/" and the /api routes Ollama's clients use
// (generate, chat, tags, show, ps, pull, copy, delete, version, tokenize). It decodes wire JSON
// straight into core requests, writes replies as Ollama does (NDJSON streaming by default, one
// JSON object with "stream": false) and renders every error as {"error": "..."} with Ollama's
// status codes: 400 bad input, 403 model management from another machine, 404 unknown model,
// 413 body over 100 MiB, 500 engine failure, 503 overloaded, 501 for push, create and blobs. An
// error after a stream began arrives as a last {"error": "..."} line.
//
// Decisions where Ollama and this server differ:
//
//   - Model names are catalog ids: "id" and "id:latest" name the same model, and a pulled
//     model is "hf.co/OWNER/REPO:QUANT" (the "hf.co/" may be left out). /api/tags and /api/ps
//     list "id:latest", or the id as is when it has a tag of its own. A name that is a file
//     path (or holds "..", control characters, or is over 256 bytes) is refused with 400.
//     Replies echo the name the client sent.
//   - /api/pull fetches GGUF files from Hugging Face only (hf.co/OWNER/REPO:QUANT,
//     OWNER/REPO:QUANT, OWNER/REPO/FILE.gguf, OWNER/REPO); an Ollama-library name such as
//     "llama3.2" is a 400 that shows those forms. The stream has Ollama's lines: "pulling
//     manifest", "pulling <12 hex digits of the digest>" with total and completed per file (as
//     often as the download reports, at most every 100 ms), "verifying sha256 digest",
//     "writing manifest", "success". "pulling manifest" is sent once the reference resolved,
//     so an unknown repository or quant is a 404 or 400 status, not a 200 stream that fails.
//     insecure is ignored.
//   - /api/copy registers destination as another name for source's file (no bytes are
//     copied); a destination that exists is a 400 rather than overwritten. /api/delete waits
//     for generations running on the model, and deletes the file only when it lies in the
//     models folder and no other name uses it.
//   - Pull, copy and delete need an admin key, or without API keys a loopback peer (403 otherwise).
//     Once keys exist, keep_alive 0 (an unload) needs an admin key too. A key limited to some
//     models gets, for any other, Ollama's 404 for a model it does not have, before anything
//     loads or unloads it; the Modelfile's FROM line is the file's name unless the caller is
//     trusted with paths (see auth.Trusted).
//   - Only /api/generate with no prompt (Ollama's load call) is an explicit load, which retries
//     a failed load at once; chats and embeddings wait out the failed load's backoff.
//   - prompt_eval_count counts only the prompt tokens actually evaluated (prompt minus the part
//     served from the prefix cache), as Ollama's own count does after a cache hit.
//     prompt_eval_duration is the prefill, which also yields the first token; eval_duration is
//     the decode of the tokens after it, and eval_count counts every completion token.
//     load_duration is the time spent making sure the model is loaded; total_duration runs from
//     the request's arrival to the last line.
//   - /api/generate without raw wraps prompt (and system) as one user (and system) message in
//     the model's chat template; with "raw": true the prompt is continued as is. A custom
//     template is refused (400).
//   - keep_alive is Ollama's (a duration string, or seconds as a number; negative keeps the
//     model loaded) and also takes a bare number in a string ("-1", "300"), as Ollama's
//     OLLAMA_KEEP_ALIVE does; anything else is a 400. An empty request (no prompt, or no
//     messages) with keep_alive 0 unloads the model ("done_reason": "unload"); otherwise it
//     loads the model and starts its keep-alive ("load").
//   - /api/ps: size is the server's estimate of the model's memory (weights and KV cache),
//     size_vram 0. expires_at is when the idle model unloads; while it generates, the default
//     keep-alive from now; with no unload scheduled, far in the future (as Ollama shows
//     keep_alive -1). A copy shares its original's worker, so a loaded file is listed once.
//   - context (the old token context) is accepted and ignored, and replies carry none: send the
//     conversation with /api/chat instead; it is served warm from the prefix cache.
//   - options: temperature, top_p, top_k, min_p, seed, num_predict, stop, repeat_penalty,
//     presence_penalty and frequency_penalty are applied, and so is ignore_eos (an extension:
//     generate up to num_predict past the end-of-generation token); every option Ollama knows is
//     type-checked (a wrong type is a 400); num_ctx, num_gpu, num_thread, num_batch, main_gpu,
//     use_mmap, num_keep, typical_p and repeat_last_n are accepted and ignored (the window and
//     runtime are fixed when the server loads the model); tool_choice and parallel_tool_calls
//     are extensions (below); other unknown options are ignored, as Ollama ignores them. Unset
//     options take the server's defaults, not Ollama's. num_predict <= 0 and seed <= 0 mean
//     "no cap" and "a fresh seed".
//   - format "json" or a JSON schema object sets the request's structured-output constraint.
//   - suffix is fill-in-the-middle (core.Infill, prefix-suffix-middle order) on a model with
//     FIM markers, which /api/show lists with the "insert" capability; on any other model it is
//     Ollama's 400 "does not support insert". system does not apply to it (400).
//   - tools go to the model's chat template (through a prompt polyfill when it has no tool
//     syntax; /api/show lists "tools" either way). Calls come back in message.tool_calls with
//     id, function.index, name and arguments as a JSON object; streamed, each call arrives in a
//     line of its own once complete, as Ollama sends them. done_reason stays "stop" when the
//     reply made calls (Ollama's word; OpenAI's tool_calls is not used), and "length" for a
//     reply cut by num_predict. History tool_calls take arguments as a JSON object (anything
//     else is a 400); a role "tool" message names its call with tool_name and may carry
//     tool_call_id, which is otherwise filled in from the call of the same name in the latest
//     assistant turn (for templates that print it; see pairResults).
//   - options.tool_choice is an extension (Ollama has no tool_choice): "auto" (the default),
//     "none" (the tools are shown but the reply is served as text), "required" (the reply is
//     one or more calls, forced by a grammar so even a tiny model makes a parsable call) or
//     the name of a tool to call. A name that is not in tools is a 400; so is "required" or a
//     name on /api/generate, which takes no tools. Because the words are modes, a tool named
//     auto, none or required cannot be forced by name. options.parallel_tool_calls (a
//     boolean, OpenAI's field; also an extension) false allows at most one call per reply;
//     with a forced call it makes the grammar ask for one call rather than a list, which a
//     small model may keep adding to until num_predict cuts it.
//   - Text that looks like a tool call but does not parse is served as content, and the last
//     line carries {"superfluid": {"warnings": ["..."]}}, an extension object Ollama's
//     clients ignore; the request record keeps the warning.
//   - think: true sets the template's enable_thinking, false clears it; "high", "medium" and
//     "low" also set reasoning_effort ("max" is sent as "high", as Ollama does). true or a
//     level on a model whose template knows no reasoning is Ollama's 400 "does not support
//     thinking". Reasoning comes back in message.thinking (chat) and thinking (generate),
//     streamed at token cadence; absent think serves it when the model reasons (Ollama
//     defaults think to true on thinking models). With think false none is returned: reasoning
//     the model produces anyway is dropped, where Ollama, whose thinking parser is then off,
//     would leave it in the content with its tags. Earlier message.thinking reaches the
//     template as reasoning_content. With raw or suffix no template is applied: think only
//     gets its capability check.
//   - logprobs and top_logprobs (0-20; anything else is Ollama's 400) on /api/chat and
//     /api/generate: a top-level logprobs list of {token, logprob, bytes, top_logprobs} per
//     completion token, on each streamed line for the tokens it covers (a line of logprobs
//     alone while text is held back, e.g. a possible tool call), all of them without
//     streaming. top_logprobs applies only with logprobs true, as in Ollama. bytes are the
//     token's own bytes, which for a token that splits a UTF-8 character differ from its text.
//   - /api/embed and /api/embeddings serve embedding models as Ollama does (embed.go): /api/embed
//     L2-normalizes its vectors, /api/embeddings does not; on a generation model both are a 400
//     "does not support embeddings", and an embedding model refuses /api/chat and
//     /api/generate with a 400. /api/show lists an embedding model's one capability,
//     "embedding".
//   - images (base64 strings, or data URLs) on chat messages and /api/generate go before the
//     message's text, as Ollama places them; a model without a vision projector refuses them
//     with a 400 naming the image. /api/tags entries carry /api/show's capabilities (an
//     extension), so a list shows which models see ("vision") and hear ("audio").
//   - lora: [{"id", "scale"}] at the top level or in options picks LoRA adapters per request
//     (an extension, as on every route); [] runs the bare model.
//   - Not served yet: /api/detokenize, /api/push, /api/create and /api/blobs answer 501.
//   - /api/tags digests are the verified SHA-256 of a pulled file. A local file's content is
//     not hashed (gigabytes per listing is too slow): its digest is the SHA-256 of its path,
//     size and modification time, which changes when the file does. A model whose file is
//     missing is still listed (size 0), so that it can be deleted.
package ollama

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
)

// Version is what /api/version reports: the Ollama release whose API this package speaks.
const Version = "0.24.0"

// Options tunes the dialect.
type Options struct {
	// WriteTimeout bounds the write of each NDJSON line (0: no bound); a client that stops
	// reading for longer is dropped and its generation stopped.
	WriteTimeout time.Duration
}

type handlers struct {
	svc  *core.Service
	opts Options
	meta metaCache
}

// Routes registers the Ollama routes on r.
func Routes(r gin.IRouter, svc *core.Service, opts Options) {
	h := &handlers{svc: svc, opts: opts}
	running := func(c *gin.Context) { c.String(http.StatusOK, "Ollama is running") }
	r.GET("/", running)
	r.HEAD("/", running)
	version := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"version": Version}) }
	r.GET("/api/version", version)
	r.HEAD("/api/version", version)
	r.POST("/api/generate", Handle(h.generate))
	r.POST("/api/chat", Handle(h.chat))
	r.GET("/api/tags", Handle(h.tags))
	r.HEAD("/api/tags", Handle(h.tags))
	r.POST("/api/show", Handle(h.show))
	r.GET("/api/ps", Handle(h.ps))
	h.routesEmbed(r)
	r.POST("/api/tokenize", Handle(h.tokenize))
	r.POST("/api/detokenize", Handle(notImplemented("detokenizing is not available on this server yet")))
	r.POST("/api/pull", admin(h.pull))
	r.POST("/api/copy", admin(h.copyModel))
	r.DELETE("/api/delete", admin(h.remove))
	create := Handle(notImplemented("creating and pushing models is not supported: pull a GGUF model from Hugging Face with /api/pull (hf.co/OWNER/REPO:QUANT), or serve a local file: superfluid serve path/to/model.gguf"))
	r.POST("/api/push", create)
	r.POST("/api/create", create)
	r.HEAD("/api/blobs/:digest", create)
	r.POST("/api/blobs/:digest", create)
}

func notImplemented(msg string) Handler {
	return func(*gin.Context) error { return &Error{Status: http.StatusNotImplemented, Message: msg} }
}

func (h *handlers) tokenize(c *gin.Context) error {
	var req tokenizeRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	m, err := h.model(c.Request.Context(), req.Model)
	if err != nil {
		return err
	}
	text := req.Content
	if text == nil {
		text = req.Text
	}
	if text == nil {
		return badRequest("content is required: send the text to tokenize in content")
	}
	tokens, err := h.svc.Tokenize(c.Request.Context(), m.ID, *text, false)
	if err != nil {
		return err
	}
	if tokens == nil {
		tokens = []int{} // an empty text has no tokens, not null
	}
	c.JSON(http.StatusOK, gin.H{"model": req.Model, "tokens": tokens})
	return nil
}

// newID names a request in the records ("ollama-<hex>"); Ollama's replies carry no id.
func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "ollama-" + hex.EncodeToString(b)
}

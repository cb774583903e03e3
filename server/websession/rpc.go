package websession

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrNotFound is what a Session returns (wrapped) for a missing model or conversation.
var ErrNotFound = errors.New("not found")

// Frame is one call: over POST /web/rpc, POST /web/stream (method chat) or a WebSocket.
type Frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// RPCError is a call's failure, in a reply frame or a stream's error event.
type RPCError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return e.Message }

// Reply is the answer to one call: Result or Error.
type Reply struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Result any             `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPC error codes.
const (
	CodeInvalidFrame  = "invalid_frame"  // not a JSON object with a method
	CodeUnknownMethod = "unknown_method" // no such method
	CodeInvalidParams = "invalid_params" // params missing or of the wrong shape
	CodeNotFound      = "not_found"      // the model or conversation does not exist
	CodeFailed        = "failed"         // the session could not do it (the message says why)
	CodeStopped       = "stopped"        // a chat was cancelled
)

func invalidParams(format string, a ...any) *RPCError {
	return &RPCError{CodeInvalidParams, fmt.Sprintf(format, a...)}
}

// rpcError maps a Session's error to a frame error.
func rpcError(err error) *RPCError {
	var re *RPCError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, ErrNotFound):
		return &RPCError{CodeNotFound, err.Error()}
	case errors.Is(err, context.Canceled):
		return &RPCError{CodeStopped, "the reply was stopped"}
	}
	return &RPCError{CodeFailed, err.Error()}
}

// parseFrame decodes one frame strictly: one JSON object, known fields, a method.
func parseFrame(b []byte) (Frame, *RPCError) {
	var f Frame
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, &RPCError{CodeInvalidFrame, "a frame is a JSON object {\"id\", \"method\", \"params\"}: " + err.Error()}
	}
	if dec.More() {
		return f, &RPCError{CodeInvalidFrame, "one JSON object per frame"}
	}
	if f.Method == "" {
		return f, &RPCError{CodeInvalidFrame, "the frame names no method"}
	}
	return f, nil
}

// decodeParams decodes a call's params (strictly) into v; absent params leave v as is.
func decodeParams(raw json.RawMessage, v any) *RPCError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidParams("params: %v", err)
	}
	return nil
}

// chatParams are the chat method's params.
type chatParams struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	System      string    `json:"system"`
	Temperature *float64  `json:"temperature"`
	TopP        *float64  `json:"top_p"`
	MaxTokens   int       `json:"max_tokens"`
	Seed        uint64    `json:"seed"`
}

// Playground defaults (the desktop's).
const (
	defaultTemperature = 0.8
	defaultMaxTokens   = 256
)

// chatCall checks a chat's params and turns them into the Session's terms: the system prompt
// leads the messages, as the desktop playground sends it, and attachments named by id are
// the uploaded files.
func (h *Handler) chatCall(raw json.RawMessage) (ChatSettings, []Message, *RPCError) {
	var p chatParams
	if err := decodeParams(raw, &p); err != nil {
		return ChatSettings{}, nil, err
	}
	s := ChatSettings{Model: p.Model, Temperature: defaultTemperature, MaxTokens: p.MaxTokens, Seed: p.Seed}
	switch {
	case p.Model == "":
		return s, nil, invalidParams("chat needs a model")
	case len(p.Messages) == 0:
		return s, nil, invalidParams("chat needs messages")
	case p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2):
		return s, nil, invalidParams("temperature must be from 0 to 2")
	case p.TopP != nil && (*p.TopP <= 0 || *p.TopP > 1):
		return s, nil, invalidParams("top_p must be above 0 and at most 1")
	case p.MaxTokens < 0:
		return s, nil, invalidParams("max_tokens must be above 0")
	}
	if p.Temperature != nil {
		s.Temperature = *p.Temperature
	}
	if p.TopP != nil {
		s.TopP = *p.TopP
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = defaultMaxTokens
	}
	msgs := make([]Message, 0, len(p.Messages)+1)
	if sys := strings.TrimSpace(p.System); sys != "" {
		msgs = append(msgs, Message{Role: "system", Content: sys})
	}
	for i, m := range p.Messages {
		if m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
			return s, nil, invalidParams("messages[%d].role must be system, user or assistant", i)
		}
		msgs = append(msgs, Message{Role: m.Role, Content: m.Content, Attachments: m.Attachments})
	}
	if err := h.resolveAttachments(msgs[len(msgs)-len(p.Messages):]); err != nil {
		return s, nil, err
	}
	return s, msgs, nil
}

// chatResult is a whole reply, for a chat called over POST /web/rpc.
type chatResult struct {
	Text      string `json:"text"`
	Reasoning string `json:"reasoning,omitempty"`
	ChatStats
}

// call runs one non-streamed method.
func (h *Handler) call(ctx context.Context, f Frame) (any, *RPCError) {
	var id struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}
	needID := func(what string) *RPCError {
		if err := decodeParams(f.Params, &id); err != nil {
			return err
		}
		if what == "model" && id.Model == "" || what == "id" && id.ID == "" {
			return invalidParams("%s needs params.%s", f.Method, what)
		}
		return nil
	}
	done := func(v any, err error) (any, *RPCError) {
		if err != nil {
			return nil, rpcError(err)
		}
		return v, nil
	}
	switch f.Method {
	case "models.list":
		return h.s.Models(), nil
	case "limits":
		return map[string]int64{"max_frame": MaxFrame, "max_attachment": h.cfg.MaxAttachment}, nil
	case "models.load", "models.unload":
		if err := needID("model"); err != nil {
			return nil, err
		}
		op := h.s.Load
		if f.Method == "models.unload" {
			op = h.s.Unload
		}
		if err := op(id.Model); err != nil {
			return nil, rpcError(err)
		}
		for _, m := range h.s.Models() {
			if m.ID == id.Model {
				return m, nil
			}
		}
		return map[string]string{"id": id.Model}, nil
	case "chat":
		s, msgs, perr := h.chatCall(f.Params)
		if perr != nil {
			return nil, perr
		}
		var text, reasoning strings.Builder
		stats, err := h.s.Chat(ctx, s, msgs, func(p Piece) {
			text.WriteString(p.Text)
			reasoning.WriteString(p.Reasoning)
		})
		return done(chatResult{Text: text.String(), Reasoning: reasoning.String(), ChatStats: stats}, err)
	case "conversations.list":
		list := h.s.Conversations()
		if list == nil {
			list = []Conversation{}
		}
		return list, nil
	case "conversations.get":
		if err := needID("id"); err != nil {
			return nil, err
		}
		return done(h.s.OpenConversation(id.ID))
	case "conversations.save":
		var c Conversation
		if err := decodeParams(f.Params, &c); err != nil {
			return nil, err
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
		}
		return done(map[string]string{"id": c.ID}, h.s.SaveConversation(c))
	case "conversations.delete":
		if err := needID("id"); err != nil {
			return nil, err
		}
		return done(map[string]bool{"deleted": true}, h.s.DeleteConversation(id.ID))
	case "settings.get":
		if err := needID("model"); err != nil {
			return nil, err
		}
		return done(h.s.Settings(id.Model))
	case "settings.set":
		var p struct {
			Model    string        `json:"model"`
			Settings ModelSettings `json:"settings"`
		}
		if err := decodeParams(f.Params, &p); err != nil {
			return nil, err
		}
		if p.Model == "" {
			return nil, invalidParams("settings.set needs params.model")
		}
		if err := h.s.SetSettings(p.Model, p.Settings); err != nil {
			return nil, rpcError(err)
		}
		return done(h.s.Settings(p.Model))
	}
	return nil, &RPCError{CodeUnknownMethod, fmt.Sprintf("no method %q", f.Method)}
}

// serveRPC is POST /web/rpc: one frame in, one reply out (200 even for a call's failure,
// which the reply's error names; a body that is no frame is answered 400).
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	f, ferr := parseFrame(body)
	if ferr != nil {
		writeJSON(w, http.StatusBadRequest, Reply{Error: ferr})
		return
	}
	res, cerr := h.call(r.Context(), f)
	writeJSON(w, http.StatusOK, Reply{ID: f.ID, Result: res, Error: cerr})
}

// readBody reads a request body capped at MaxFrame.
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		return nil, &httpError{http.StatusBadRequest, "invalid_body", "read the body: " + err.Error()}
	}
	return buf.Bytes(), nil
}

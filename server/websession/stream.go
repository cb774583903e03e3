package websession

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// doneEvent ends a streamed chat: the reply's stats, or stopped when it was cancelled.
type doneEvent struct {
	ChatStats
	Stopped bool `json:"stopped,omitempty"`
}

// serveStream is POST /web/stream {"method":"chat","params"}: the reply as server-sent events,
// `event: piece` {text, reasoning} as they come, then `event: done` (stats) or `event: error`
// {code, message}. The client closing the stream stops the generation (the request's context).
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	f, ferr := parseFrame(body)
	if ferr == nil && f.Method != "chat" {
		ferr = &RPCError{CodeUnknownMethod, fmt.Sprintf("only chat streams, not %q", f.Method)}
	}
	if ferr != nil {
		writeJSON(w, http.StatusBadRequest, Reply{ID: f.ID, Error: ferr})
		return
	}
	s, msgs, perr := h.chatCall(f.Params)
	if perr != nil {
		writeJSON(w, http.StatusBadRequest, Reply{ID: f.ID, Error: perr})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ctx, cancel := contextWithCancel(r)
	defer cancel()
	var mu sync.Mutex // pieces may come from the session's goroutine
	failed := false
	send := func(event string, v any) {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		b, _ := json.Marshal(v)
		// A client that stops reading is dropped within WriteTimeout, and its generation ends.
		_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			failed = true
			cancel()
			return
		}
		if err := rc.Flush(); err != nil {
			failed = true
			cancel()
		}
	}
	stats, err := h.s.Chat(ctx, s, msgs, func(p Piece) { send("piece", p) })
	switch {
	case err != nil && ctx.Err() != nil:
		send("done", doneEvent{Stopped: true})
	case err != nil:
		send("error", rpcError(err))
	default:
		send("done", doneEvent{ChatStats: stats})
	}
}

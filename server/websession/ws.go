package websession

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Subprotocol is the WebSocket subprotocol the page asks for; the token rides beside it as a
// second offered protocol "token.<token>" (browsers cannot set Authorization on a WebSocket,
// and a token in the URL would leak into logs and history).
const Subprotocol = "superfluid.v1"

// maxPendingSockets bounds the sockets waiting for their auth frame (rev20b).
const maxPendingSockets = 64

// takeSocket takes one of MaxSockets' slots; false when they are all taken.
func (h *Handler) takeSocket() bool {
	if h.sockets.Add(1) > int64(h.cfg.MaxSockets) {
		h.sockets.Add(-1)
		return false
	}
	return true
}

// authTimeout is how long a socket without a token in its handshake has to send its auth frame.
const authTimeout = 10 * time.Second

// Per-socket bounds: calls and streamed chats running at once (more get CodeFailed).
const maxCallsPerSocket = 8

// streamEvent is a streamed chat's frame over the WebSocket: a piece, the end or a failure.
type streamEvent struct {
	ID    json.RawMessage `json:"id,omitempty"`
	Event string          `json:"event"` // piece, done or error
	*Piece
	*doneEvent
	Error *RPCError `json:"error,omitempty"`
}

// offeredToken is the token a handshake offers as the "token.<token>" subprotocol.
func offeredToken(r *http.Request) string {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), "token."); ok {
				return tok
			}
		}
	}
	return ""
}

// serveWS is GET /web/ws. The token comes in the handshake (the subprotocol pair, or
// Authorization for a script) or as the first frame {"method":"auth","params":{"token"}};
// a wrong one is refused before the upgrade, or closes the socket with 1008.
func (h *Handler) serveWS(w http.ResponseWriter, r *http.Request) {
	cred := offeredToken(r)
	if cred == "" {
		cred = bearer(r)
	}
	authed := cred != "" && h.allowed(cred)
	if cred != "" && !authed {
		writeError(w, errNoToken)
		return
	}
	// A socket authenticated in its handshake takes a slot of MaxSockets; one still owing its
	// auth frame takes one of maxPendingSockets instead, so tokenless sockets (anyone local can
	// open them) never crowd out the page's.
	if authed {
		if !h.takeSocket() {
			writeError(w, errTooMany)
			return
		}
	} else if h.pending.Add(1) > maxPendingSockets {
		h.pending.Add(-1)
		writeError(w, errTooMany)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Subprotocol},
		// ServeHTTP checked the Origin already, accepting localhost and 127.0.0.1 alike.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return // Accept answered the bad handshake
	}
	conn.SetReadLimit(MaxFrame)
	ctx, cancel := context.WithCancel(h.base)
	s := &socket{h: h, conn: conn, ctx: ctx, cancel: cancel, streams: map[string]context.CancelFunc{},
		slots: make(chan struct{}, maxCallsPerSocket)}
	defer s.close()
	defer func() {
		if s.slot {
			h.sockets.Add(-1)
		} else if !authed {
			h.pending.Add(-1)
		}
	}()
	s.slot = authed
	go s.keepAlive()
	go func() {
		select {
		case <-h.base.Done(): // Handler.Close: the app is quitting
			conn.Close(websocket.StatusGoingAway, "server closing")
		case <-ctx.Done():
		}
	}()
	s.readLoop(authed)
}

// socket is one open WebSocket.
type socket struct {
	h      *Handler
	conn   *websocket.Conn
	ctx    context.Context // ends with the socket: its calls and streams stop
	cancel context.CancelFunc
	slots  chan struct{} // the calls running now
	slot   bool          // holds a slot of MaxSockets (read loop only)

	mu      sync.Mutex
	streams map[string]context.CancelFunc // the running chats by frame id, for cancel
	calls   sync.WaitGroup
}

func (s *socket) close() {
	s.cancel()
	s.calls.Wait()
	s.conn.CloseNow()
}

// write sends one frame within WriteTimeout; a client that stops reading loses the socket.
func (s *socket) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.h.cfg.WriteTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		s.cancel()
		s.conn.CloseNow()
	}
}

// keepAlive pings the client every PingInterval; no pong within WriteTimeout closes the socket
// (a sleeping laptop's browser, a dead network), so idle sockets do not pile up forever.
func (s *socket) keepAlive() {
	t := time.NewTicker(s.h.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.h.cfg.WriteTimeout)
		err := s.conn.Ping(ctx)
		cancel()
		if err != nil {
			s.cancel()
			s.conn.CloseNow()
			return
		}
	}
}

// readLoop reads frames until the socket ends. A frame that is no call gets an error reply and
// the socket stays open; a frame over MaxFrame closes it with 1009 (the library's read limit).
func (s *socket) readLoop(authed bool) {
	var authTimer *time.Timer
	if !authed {
		authTimer = time.AfterFunc(authTimeout, func() {
			s.conn.Close(websocket.StatusPolicyViolation, "no auth frame")
		})
	}
	for {
		// Not s.ctx: a cancelled Read closes at once, without the close frame Handler.Close
		// sends; closing the connection ends this Read.
		typ, b, err := s.conn.Read(context.Background())
		if err != nil {
			return
		}
		f, ferr := parseFrame(b)
		if typ != websocket.MessageText {
			ferr = &RPCError{CodeInvalidFrame, "frames are JSON text, not binary"}
		}
		if !authed {
			if !s.authenticate(f, ferr) {
				s.conn.Close(websocket.StatusPolicyViolation, "a valid token is required")
				return
			}
			authTimer.Stop()
			authed = true
			s.h.pending.Add(-1)
			if s.slot = s.h.takeSocket(); !s.slot {
				s.h.pending.Add(1) // the deferred release counts it down again
				s.conn.Close(websocket.StatusTryAgainLater, "too many WebSockets are open")
				return
			}
			s.write(Reply{ID: f.ID, Result: map[string]bool{"ok": true}})
			continue
		}
		if ferr != nil {
			s.write(Reply{ID: f.ID, Error: ferr})
			continue
		}
		s.dispatch(f)
	}
}

// authenticate reports whether f is an auth frame with a valid token.
func (s *socket) authenticate(f Frame, ferr *RPCError) bool {
	if ferr != nil || f.Method != "auth" {
		return false
	}
	var p struct {
		Token string `json:"token"`
	}
	return decodeParams(f.Params, &p) == nil && s.h.allowed(p.Token)
}

// dispatch runs one call beside the read loop (a load or a chat takes a while, and a cancel
// must be read meanwhile).
func (s *socket) dispatch(f Frame) {
	key := string(f.ID)
	if f.Method == "cancel" {
		s.mu.Lock()
		stop, ok := s.streams[key]
		s.mu.Unlock()
		if !ok {
			s.write(Reply{ID: f.ID, Error: &RPCError{CodeNotFound, "no chat with this id is running"}})
			return
		}
		stop() // the stream answers with its done event, stopped
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.write(Reply{ID: f.ID, Error: &RPCError{CodeFailed, "too many calls running on this socket"}})
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	if f.Method == "chat" {
		s.mu.Lock()
		if _, dup := s.streams[key]; dup || len(f.ID) == 0 {
			s.mu.Unlock()
			cancel()
			<-s.slots
			s.write(Reply{ID: f.ID, Error: invalidParams("a chat needs an id no other running chat has")})
			return
		}
		s.streams[key] = cancel
		s.mu.Unlock()
	}
	s.calls.Add(1)
	go func() {
		defer func() {
			cancel()
			s.mu.Lock()
			delete(s.streams, key)
			s.mu.Unlock()
			<-s.slots
			s.calls.Done()
		}()
		if f.Method == "chat" {
			s.chat(ctx, f)
			return
		}
		res, err := s.h.call(ctx, f)
		s.write(Reply{ID: f.ID, Result: res, Error: err})
	}()
}

// chat streams one reply as piece frames, then done (stopped when cancelled) or error.
func (s *socket) chat(ctx context.Context, f Frame) {
	set, msgs, perr := s.h.chatCall(f.Params)
	if perr != nil {
		s.write(streamEvent{ID: f.ID, Event: "error", Error: perr})
		return
	}
	stats, err := s.h.s.Chat(ctx, set, msgs, func(p Piece) {
		s.write(streamEvent{ID: f.ID, Event: "piece", Piece: &p})
	})
	switch {
	case err != nil && ctx.Err() != nil:
		s.write(streamEvent{ID: f.ID, Event: "done", doneEvent: &doneEvent{Stopped: true}})
	case err != nil:
		s.write(streamEvent{ID: f.ID, Event: "error", Error: rpcError(err)})
	default:
		s.write(streamEvent{ID: f.ID, Event: "done", doneEvent: &doneEvent{ChatStats: stats}})
	}
}

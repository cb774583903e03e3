// Package websession is superfluid's browser transport (--web): a second, loopback-only
// listener that carries the desktop playground's session (models, chat, saved conversations,
// model settings) to a browser page. It serves GET /web/health, POST /web/rpc (one JSON call),
// POST /web/stream (a chat as server-sent events), GET /web/ws (the same calls and streamed
// chats over one WebSocket), POST /web/attachments (a file for a chat to name by id) and GET /
// (the embedded playground page).
//
// It knows the desktop only through the Session interface (package app adapts the desktop
// controller to it), so the browser does exactly what the desktop playground does. Every route
// but /web/health and the page needs the per-install token (token.go) or an admin API key; the
// Host must be a loopback name and an Origin, when sent, this listener's own (guard.go).
package websession

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
	"sync/atomic"
	"time"
)

// Model is one catalog model as the playground lists it.
type Model struct {
	ID           string `json:"id"`
	Quantization string `json:"quantization"`
	Size         int64  `json:"size_bytes"`
	Context      int    `json:"context_length"`
	// State is unloaded, loading, loaded, unloading, failed or missing.
	State string `json:"state"`
	Err   string `json:"error,omitempty"`
	// Vision and Audio report whether the model takes images and audio clips.
	Vision bool `json:"vision"`
	Audio  bool `json:"audio"`
}

// Message is one chat turn.
type Message struct {
	Role      string `json:"role"` // system, user or assistant
	Content   string `json:"content"`
	Reasoning string `json:"reasoning,omitempty"`
	// Attachments are a user turn's images and audio clips (attachments.go); saved
	// conversations do not keep them.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// ChatSettings are the playground's choices for one reply; zero values are the server's
// defaults (Temperature is always sent: 0 is greedy).
type ChatSettings struct {
	Model       string
	Temperature float64
	TopP        float64
	MaxTokens   int
	Seed        uint64
}

// Piece is the next bit of a streamed reply: its text, or the model's reasoning before it.
type Piece struct {
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// ChatStats describe a finished reply.
type ChatStats struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CachedTokens     int     `json:"cached_tokens"`
	CompletionTokens int     `json:"tokens"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	FinishReason     string  `json:"finish_reason"`
}

// Conversation is a saved playground chat; lists carry no messages.
type Conversation struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Model    string    `json:"model"`
	System   string    `json:"system"`
	Messages []Message `json:"messages,omitempty"`
	Updated  string    `json:"updated,omitempty"`
}

// ModelSettings are one model's own settings ("" and 0: the server's default), as the desktop's
// settings dialog edits them.
type ModelSettings struct {
	ContextLength int    `json:"context_length"`
	Lanes         int    `json:"lanes"`
	KeepAlive     string `json:"keep_alive"`
	Runtime       string `json:"runtime"`
	Temperature   string `json:"temperature"`
	TopP          string `json:"top_p"`
	TopK          string `json:"top_k"`
	MaxTokens     int    `json:"max_tokens"`
	SystemPrompt  string `json:"system_prompt"`
	// Speculative (off, ngram, draft; "" the server's), DraftModel, DraftTokens (0: the
	// engine's) and FlashAttention (on, off; "" auto): the model's speed settings.
	Speculative    string `json:"speculative"`
	DraftModel     string `json:"draft_model"`
	DraftTokens    int    `json:"draft_tokens"`
	FlashAttention string `json:"flash_attention"`
}

// Session is what the browser may do: the desktop playground's part of tray.Controller.
type Session interface {
	Models() []Model
	// Load and Unload return when the model is loaded or unloaded.
	Load(id string) error
	Unload(id string) error
	// Chat streams a reply to msgs, calling onPiece for each piece; it stops when ctx ends.
	Chat(ctx context.Context, s ChatSettings, msgs []Message, onPiece func(Piece)) (ChatStats, error)
	// Conversations lists the saved chats, most recent first, without messages.
	Conversations() []Conversation
	OpenConversation(id string) (Conversation, error)
	// SaveConversation stores a chat (new or updated); its ID is set.
	SaveConversation(c Conversation) error
	// DeleteConversation removes a saved chat.
	DeleteConversation(id string) error
	Settings(id string) (ModelSettings, error)
	SetSettings(id string, s ModelSettings) error
}

// Config is the transport's setup.
type Config struct {
	// Token is the per-install token every call must carry (LoadToken).
	Token string
	// AdminKey, when set, reports whether an API key may be used instead of the token (an
	// admin key of the main server); nil accepts only the token.
	AdminKey func(key string) bool
	// WriteTimeout bounds each write to a client (a reply, an event, a WebSocket frame);
	// 0 is DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PingInterval is how often an idle WebSocket is pinged (a missing pong within
	// WriteTimeout closes it); 0 is DefaultPingInterval.
	PingInterval time.Duration
	// MaxSockets bounds the WebSockets open at once (more get 503); 0 is DefaultMaxSockets.
	MaxSockets int
	// MaxAttachment bounds one uploaded attachment (413 past it), MaxUploads all of them held
	// at once (the least recently used go first); 0 is DefaultMaxAttachment, DefaultMaxUploads.
	MaxAttachment, MaxUploads int64
}

// Defaults of Config.
const (
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 30 * time.Second
	DefaultMaxSockets   = 2048
	// MaxFrame is the largest request body or WebSocket frame: a frame over it closes the
	// socket with 1009 (message too big), a body over it is answered 413.
	MaxFrame = 1 << 20
)

//go:embed page
var pageFS embed.FS

// Handler serves the --web listener.
type Handler struct {
	s       Session
	cfg     Config
	mux     *http.ServeMux
	uploads *uploads     // attachments uploaded for chats (attachments.go)
	sockets atomic.Int64 // authenticated WebSockets (MaxSockets bounds them)
	pending atomic.Int64 // WebSockets still owing their auth frame (maxPendingSockets)
	// base ends with Close: every WebSocket closes (http.Server.Shutdown leaves hijacked
	// connections alone).
	base      context.Context
	closeBase context.CancelFunc
}

// New is the handler over s.
func New(s Session, cfg Config) *Handler {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.MaxSockets <= 0 {
		cfg.MaxSockets = DefaultMaxSockets
	}
	if cfg.MaxAttachment <= 0 {
		cfg.MaxAttachment = DefaultMaxAttachment
	}
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = DefaultMaxUploads
	}
	h := &Handler{s: s, cfg: cfg, mux: http.NewServeMux(), uploads: newUploads(cfg.MaxUploads)}
	h.base, h.closeBase = context.WithCancel(context.Background())
	files, _ := fs.Sub(pageFS, "page")
	h.mux.HandleFunc("GET /web/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	h.mux.Handle("POST /web/rpc", h.authed(h.serveRPC))
	h.mux.Handle("POST /web/stream", h.authed(h.serveStream))
	h.mux.Handle("POST /web/attachments", h.authedUpTo(cfg.MaxAttachment, h.serveAttachment))
	h.mux.Handle("GET /web/ws", http.HandlerFunc(h.serveWS)) // authenticates itself (ws.go)
	pageFiles := http.FileServerFS(files)
	h.mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page is static and carries no secret; its script gets the token from the URL
		// fragment. No framing by other sites, no inline scripts; images also from blob: URLs,
		// the page's previews of files about to be attached (object URLs it made itself).
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		pageFiles.ServeHTTP(w, r)
	}))
	return h
}

// ServeHTTP checks the Host and Origin of every request (guard.go), then routes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := checkHostOrigin(r); err != nil {
		writeError(w, err)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// Sockets is how many WebSockets are open now.
func (h *Handler) Sockets() int { return int(h.sockets.Load() + h.pending.Load()) }

// Close closes every WebSocket (their chats stop); plain requests end with the http.Server.
func (h *Handler) Close() { h.closeBase() }

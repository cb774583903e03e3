// Package tray is the whole desktop UI of superfluid (the folder name is the product's top
// level): the main window and its tabs (Models with downloads and settings, Server, Playground,
// Keys) and the tray menu and icon. It knows the server only through the Controller interface and its
// events, so it can be driven by a fake in headless tests; every UI update from an event runs
// inside fyne.Do (App.do).
package tray

import "context"

// ServerStatus is the server as the app shows it.
type ServerStatus struct {
	Running bool
	// Address is host:port while running, or the address it would use.
	Address string
	// Err says why the server is not running (a port in use, ...); "" when it stopped cleanly.
	Err string
}

// Model is one catalog model as the app lists it.
type Model struct {
	ID           string
	Quantization string
	Source       string
	Size         int64
	Context      int
	Runtime      string
	// State is unloaded, loading, loaded, unloading, failed or missing.
	State string
	Err   string
	// Need is the estimated RAM the model takes loaded.
	Need int64
	// Vision and Audio report whether the model takes images and audio clips (it has a
	// projector that encodes them).
	Vision, Audio bool
}

// Loaded reports whether the model is loaded.
func (m Model) Loaded() bool { return m.State == "loaded" }

// Event kinds the app reacts to.
const (
	EventModels   = "models"   // a model's state or the catalog changed
	EventPull     = "pull"     // download progress
	EventServer   = "server"   // the server started or stopped
	EventActivity = "activity" // generations started or ended
)

// Event is a change pushed by the controller.
type Event struct {
	Kind  string
	Model string
	Err   string
	// Download progress (EventPull).
	Status           string
	Total, Completed int64
}

// Message is one chat turn.
type Message struct {
	Role    string // system, user, assistant or tool (a tool's result)
	Content string
	// Reasoning is what a thinking model thought before an assistant turn; shown folded and
	// saved with the conversation.
	Reasoning string
	// ReasoningTokens is how many tokens the reasoning took (0: not known).
	ReasoningTokens int
	// ToolCalls are the calls an assistant turn made; ToolCallID names the call a tool turn
	// answers (chat.go).
	ToolCalls  []ToolCall
	ToolCallID string
	// Attachments are the images and audio clips of a user turn; they go before its text in
	// the prompt, as the transcript shows them. Not saved with the conversation.
	Attachments []Attachment
}

// Attachment is an image or audio file attached to a user turn.
type Attachment struct {
	Name string // the file's base name, as the chip shows it
	MIME string // image/png, image/jpeg, image/webp, image/gif, audio/wav, audio/mpeg or audio/flac
	Data []byte // the file's bytes
}

// Piece is the next bit of a streamed reply: its text, or the model's reasoning before it.
type Piece struct {
	Text, Reasoning string
}

// ChatSettings are the playground's choices for one reply.
type ChatSettings struct {
	Model       string
	Temperature float64
	MaxTokens   int
	// TopP (0: the server's default) and Seed (0: a fresh seed) are the browser playground's
	// (--web) further choices.
	TopP float64
	Seed uint64
}

// ChatStats describe a finished reply.
type ChatStats struct {
	PromptTokens, CachedTokens, CompletionTokens int
	TokensPerSecond                              float64
	FinishReason                                 string
}

// Lane is one lane of a loaded model, as the server tab shows it.
type Lane struct {
	Model        string
	ID           int
	State        string // idle, prefill or decode
	Task         string
	CachedTokens int
	Generated    int
}

// Request is one line of the recent request log.
type Request struct {
	Time                                         string // "15:04:05"
	Model, Endpoint, FinishReason, Error         string
	Status                                       int
	PromptTokens, CachedTokens, CompletionTokens int
	Duration                                     string
	// SpecProposed and SpecAccepted are speculative decoding's drafted and kept tokens (0:
	// it did not run); CacheMiss why the prompt missed the prefix cache ("" for a hit).
	SpecProposed, SpecAccepted int
	CacheMiss                  string
}

// Activity is what the server is doing: its lanes and the latest requests.
type Activity struct {
	Lanes    []Lane
	Requests []Request
}

// Conversation is a saved playground chat.
type Conversation struct {
	ID, Title, Model, System string
	Messages                 []Message
	// Updated is when it last changed, as the list shows it.
	Updated string
}

// ModelSettings are one model's own settings as the settings dialog edits them; "" and 0 mean
// the server's default. A request's own values still win over them.
type ModelSettings struct {
	ContextLength, Lanes int
	KeepAlive            string // Ollama's syntax: "5m", "0", "-1"
	Runtime              string
	Temperature, TopP    string
	TopK                 string
	MaxTokens            int
	SystemPrompt         string
	// Speculative is off, ngram, draft or "" (the server's default); DraftModel a catalog id or
	// a .gguf file with the model's vocabulary; DraftTokens 0 for the engine's default;
	// FlashAttention on, off or "" (auto).
	Speculative, DraftModel string
	DraftTokens             int
	FlashAttention          string
	// DefaultContext is the window the model loads with when ContextLength is 0 (the server's
	// --ctx, else the model's own at most 4096); TrainContext the window it was trained for
	// (0: unknown). Both are facts shown next to the field; SetSettings ignores them.
	DefaultContext, TrainContext int
}

// APIKey is one API key as the Keys tab lists it; the key itself is shown only when created.
type APIKey struct {
	ID, Name string
	// Prefix is the key's first characters ("sk-sf-1a2b3c"); "" for a key from --api-key or
	// --key-policy.
	Prefix string
	Admin  bool
	// Models are the models the key may use; empty for every model.
	Models []string
	// Source is "store" (created here or with superfluid keys), "policy" or "flag".
	Source  string
	Created string
}

// NewAPIKey is what CreateKey makes.
type NewAPIKey struct {
	Name   string
	Admin  bool
	Models []string
}

// Controller is what the desktop app may do with the server it owns.
type Controller interface {
	Server() ServerStatus
	StartServer() error
	StopServer() error
	// SetAddress changes the address (bind host and port) the server listens on from its next
	// start.
	SetAddress(host string, port int) error
	// Activity is a snapshot of the lanes and the recent requests.
	Activity() Activity
	// APIURL is the base URL other apps point at (http://host:port/v1).
	APIURL() string
	Models() []Model
	Load(id string) error
	Unload(id string) error
	Delete(id string) error
	// Pull downloads a Hugging Face reference; progress arrives as EventPull events.
	Pull(ctx context.Context, reference string) error
	// Chat streams a reply to msgs, calling onText for each piece as it arrives.
	Chat(ctx context.Context, s ChatSettings, msgs []Message, onPiece func(Piece)) (ChatStats, error)
	// Conversations lists the saved playground chats, most recent first, without messages.
	Conversations() []Conversation
	// OpenConversation returns a saved chat with its messages.
	OpenConversation(id string) (Conversation, error)
	// SaveConversation stores a chat (new or updated).
	SaveConversation(c Conversation) error
	// Settings returns a model's own settings; SetSettings stores them (a new context, lanes or
	// runtime apply at the model's next load).
	Settings(id string) (ModelSettings, error)
	SetSettings(id string, s ModelSettings) error
	// Runtimes names the runtimes this machine can run models on ("cpu" first).
	Runtimes() []string
	// Memory estimates what the model takes loaded with ctx tokens × lanes, and what is free.
	Memory(id string, ctx, lanes int) (need, free int64)
	// StartHidden reports whether the app starts in the tray without its window; SetStartHidden
	// changes it for the next start.
	StartHidden() bool
	SetStartHidden(hidden bool) error
	// Keys lists the active API keys. CreateKey makes one and returns the key itself, which
	// the app shows once; RevokeKey revokes one by id, and it stops working at once. With no
	// key at all the server answers this machine without one.
	Keys() ([]APIKey, error)
	CreateKey(k NewAPIKey) (key string, err error)
	RevokeKey(id string) error
	// Generating is how many generations are running now.
	Generating() int
	// Subscribe returns the event stream and a function that ends it.
	Subscribe() (<-chan Event, func())
	// TeamController is team mode's lanes and bookings (team.go).
	TeamController
	// DiscoverController is the Discover tab's Hub search (discover.go).
	DiscoverController
	// ChatController is the playground's context meter and conversation tools (chat.go).
	ChatController
	// DesktopController is the tray host and start at login (desktop.go).
	DesktopController
	// FirstRunController is the welcome screen's facts and choices (firstrun.go).
	FirstRunController
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/websession"
	"github.com/superfluid/superfluid/tray"
)

// webFlag declares --web on serve and the desktop app.
func webFlag(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Web, "web", cfg.Web, "also serve the browser playground on this loopback address (e.g. 127.0.0.1:8454); the URL with its token is printed at start")
}

// webSession is the desktop controller as the browser transport's Session: the browser does
// what the desktop playground does, through the same controller.
type webSession struct{ c *desktop.Controller }

var _ websession.Session = webSession{}

// notFound marks the misses the browser shows as not_found.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, llm.ErrModelNotFound) {
		return fmt.Errorf("%w: %w", websession.ErrNotFound, err)
	}
	return err
}

func (w webSession) Models() []websession.Model {
	list := w.c.Models()
	out := make([]websession.Model, 0, len(list))
	for _, m := range list {
		out = append(out, websession.Model{ID: m.ID, Quantization: m.Quantization, Size: m.Size, Context: m.Context,
			State: m.State, Err: m.Err, Vision: m.Vision, Audio: m.Audio})
	}
	return out
}

func (w webSession) Load(id string) error   { return notFound(w.c.Load(id)) }
func (w webSession) Unload(id string) error { return notFound(w.c.Unload(id)) }

func (w webSession) Chat(ctx context.Context, s websession.ChatSettings, msgs []websession.Message, onPiece func(websession.Piece)) (websession.ChatStats, error) {
	in := make([]tray.Message, 0, len(msgs))
	for _, m := range msgs {
		tm := tray.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning}
		for _, a := range m.Attachments {
			tm.Attachments = append(tm.Attachments, tray.Attachment{Name: a.Name, MIME: a.MIME, Data: a.Data})
		}
		in = append(in, tm)
	}
	st, err := w.c.Chat(ctx, tray.ChatSettings{Model: s.Model, Temperature: s.Temperature, MaxTokens: s.MaxTokens, TopP: s.TopP, Seed: s.Seed},
		in, func(p tray.Piece) { onPiece(websession.Piece{Text: p.Text, Reasoning: p.Reasoning}) })
	return websession.ChatStats{PromptTokens: st.PromptTokens, CachedTokens: st.CachedTokens, CompletionTokens: st.CompletionTokens,
		TokensPerSecond: st.TokensPerSecond, FinishReason: st.FinishReason}, notFound(err)
}

func (w webSession) Conversations() []websession.Conversation {
	list := w.c.Conversations()
	out := make([]websession.Conversation, 0, len(list))
	for _, c := range list {
		out = append(out, websession.Conversation{ID: c.ID, Title: c.Title, Model: c.Model, Updated: c.Updated})
	}
	return out
}

func (w webSession) OpenConversation(id string) (websession.Conversation, error) {
	c, err := w.c.OpenConversation(id)
	if err != nil {
		return websession.Conversation{}, notFound(err)
	}
	out := websession.Conversation{ID: c.ID, Title: c.Title, Model: c.Model, System: c.System, Updated: c.Updated}
	for _, m := range c.Messages {
		out.Messages = append(out.Messages, websession.Message{Role: m.Role, Content: m.Content})
	}
	return out, nil
}

func (w webSession) SaveConversation(c websession.Conversation) error {
	conv := tray.Conversation{ID: c.ID, Title: c.Title, Model: c.Model, System: c.System}
	for _, m := range c.Messages {
		conv.Messages = append(conv.Messages, tray.Message{Role: m.Role, Content: m.Content})
	}
	return w.c.SaveConversation(conv)
}

func (w webSession) DeleteConversation(id string) error { return notFound(w.c.DeleteConversation(id)) }

func (w webSession) Settings(id string) (websession.ModelSettings, error) {
	s, err := w.c.Settings(id)
	return websession.ModelSettings{ContextLength: s.ContextLength, Lanes: s.Lanes, KeepAlive: s.KeepAlive, Runtime: s.Runtime,
		Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MaxTokens: s.MaxTokens, SystemPrompt: s.SystemPrompt,
		Speculative: s.Speculative, DraftModel: s.DraftModel, DraftTokens: s.DraftTokens, FlashAttention: s.FlashAttention}, notFound(err)
}

func (w webSession) SetSettings(id string, s websession.ModelSettings) error {
	return notFound(w.c.SetSettings(id, tray.ModelSettings{ContextLength: s.ContextLength, Lanes: s.Lanes, KeepAlive: s.KeepAlive,
		Runtime: s.Runtime, Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MaxTokens: s.MaxTokens, SystemPrompt: s.SystemPrompt,
		Speculative: s.Speculative, DraftModel: s.DraftModel, DraftTokens: s.DraftTokens, FlashAttention: s.FlashAttention}))
}

// webServer is the running --web listener.
type webServer struct {
	h   *websession.Handler
	srv *http.Server
	// URL is the page's address with the token in its fragment (the page removes it from the
	// address bar at once).
	URL   string
	token string
	// done closes when Serve returns, with serveErr.
	done     chan struct{}
	serveErr error
}

// listenWeb opens the --web listener, before anything else starts: a network address or a
// port in use fails the start.
func listenWeb(cfg Config) (net.Listener, error) {
	if cfg.Web == "" {
		return nil, nil
	}
	if err := websession.CheckAddress(cfg.Web); err != nil {
		return nil, &UsageError{err.Error()}
	}
	return websession.Listen(cfg.Web)
}

// startWeb serves the browser transport on l over the desktop controller c; the token comes
// from the data dir (made once), and an admin API key works too.
func (a *App) startWeb(l net.Listener, c *desktop.Controller) (*webServer, error) {
	token, err := websession.LoadToken(a.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// The page refuses a file over the core's own byte limit before uploading it.
	h := websession.New(webSession{c}, websession.Config{Token: token, WriteTimeout: a.cfg.WriteTimeout,
		MaxAttachment: mediaLimits(&a.cfg).MaxBytes,
		AdminKey: func(key string) bool {
			id, ok := a.keys.Authenticate(key)
			return ok && id != nil && id.Admin
		}})
	w := &webServer{h: h, srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute},
		URL: "http://" + l.Addr().String() + "/#token=" + token, token: token, done: make(chan struct{})}
	go func() {
		w.serveErr = w.srv.Serve(l)
		close(w.done)
	}()
	return w, nil
}

// note prints the page's URL with its token, once at start (as the first admin's password).
func (w *webServer) note(out io.Writer) {
	fmt.Fprintf(out, "superfluid: browser playground on %s (the token is in the data dir's %s; keep the URL private)\n", w.URL, websession.TokenFile)
}

// Close stops the listener: its WebSockets close and their chats stop.
func (w *webServer) Close() error {
	if w == nil {
		return nil
	}
	w.h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := w.srv.Shutdown(ctx)
	<-w.done
	if !errors.Is(w.serveErr, http.ErrServerClosed) && err == nil {
		err = w.serveErr
	}
	return err
}

// benchWeb is the browser transport of a bench server (bench --suite web): on a free loopback
// port, over a desktop controller of its own.
type benchWeb struct {
	url, token string
	web        *webServer
	c          *desktop.Controller
}

func (a *App) benchWeb() (*benchWeb, error) {
	l, err := websession.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := newController(a)
	web, err := a.startWeb(l, c)
	if err != nil {
		l.Close()
		c.Close()
		return nil, err
	}
	return &benchWeb{url: "http://" + l.Addr().String(), token: web.token, web: web, c: c}, nil
}

// Close stops the listener, then the controller (nil: nothing).
func (b *benchWeb) Close() {
	if b == nil {
		return
	}
	b.web.Close()
	b.c.Close()
}

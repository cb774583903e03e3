package web

import (
	"net/http"
	"time"

	"github.com/superfluid/superfluid/server/runlog"
	"github.com/superfluid/superfluid/server/sse"
)

// The admin's runtime log (package runlog): the recent lines as a text download, and a live
// stream of them over server-sent events.
func (a *API) adminLogRoutes() {
	Raw(a, http.MethodGet, "/api/admin/runtime/log", Meta{Summary: "Download the runtime log (the recent lines, as text)", Tag: "admin runtime",
		Access: Admin, Produces: "text/plain"}, a.adminLogDownload)
	Raw(a, http.MethodGet, "/api/admin/runtime/log/stream", Meta{Summary: "Follow the runtime log: `event: log` per line (the recent ones first), then live",
		Tag: "admin runtime", Access: Admin, Produces: "text/event-stream", Query: adminLogStreamQuery{}}, a.adminLogStream)
}

// Timings of the log stream: a comment every logKeepAlive while no line comes (so proxies and
// the browser keep the connection), and each frame must reach the client within logWriteTimeout
// (a follower that stops reading is dropped, as runlog drops one that falls behind).
const (
	logKeepAlive    = 15 * time.Second
	logWriteTimeout = 10 * time.Second
)

func (a *API) runtimeLog() (*runlog.Log, error) {
	if a.cfg.RuntimeLog == nil {
		return nil, unavailable("runtime log (it is kept by serve --team)")
	}
	return a.cfg.RuntimeLog, nil
}

func (a *API) adminLogDownload(r *Request[NoBody]) error {
	l, err := a.runtimeLog()
	if err != nil {
		return err
	}
	c := r.Gin
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="superfluid-`+a.cfg.Now().UTC().Format("20060102-150405")+`.log"`)
	c.Status(http.StatusOK)
	return l.WriteText(c.Writer)
}

// adminLogStreamQuery documents GET /api/admin/runtime/log/stream's query.
type adminLogStreamQuery struct {
	Backlog int `form:"backlog" minimum:"0" maximum:"5000" doc:"how many recent lines come first (default 100)"`
}

// AdminLogLine is the data of one `event: log` (at: RFC 3339 with the fraction).
type AdminLogLine = runlog.Line

func (a *API) adminLogStream(r *Request[NoBody]) error {
	l, err := a.runtimeLog()
	if err != nil {
		return err
	}
	backlog, err := queryInt(r.Gin, "backlog", 0, 5000, 100)
	if err != nil {
		return err
	}
	sub := l.Subscribe(backlog)
	defer sub.Close()
	s := sse.New(r.Gin.Writer, logKeepAlive, logWriteTimeout)
	defer s.Close()
	s.Commit() // the headers go out at once: the page sees the stream open before any line
	_ = http.NewResponseController(r.Gin.Writer).Flush()
	for _, line := range sub.Backlog {
		if err := s.Event("log", line); err != nil {
			return err
		}
	}
	for {
		select {
		case <-r.Ctx.Done():
			return nil
		case <-a.closing: // the server is shutting down
			return nil
		case line, ok := <-sub.C:
			if !ok {
				// Dropped for falling behind (or the log closed): say so; the page reconnects.
				_ = s.Event("dropped", map[string]string{"message": "the stream fell behind and was dropped; reconnect to follow again"})
				return nil
			}
			if err := s.Event("log", line); err != nil {
				return err
			}
		}
	}
}

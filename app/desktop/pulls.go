package desktop

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/source"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/tray"
)

// Pull downloads reference through the core. It is recorded in the store while it runs, so
// that quitting the app mid-way resumes it at the next start (ResumePulls); the record goes
// when the pull ends: done, failed, or cancelled by the user. A pull cut by Close (the app
// quitting) keeps its record.
func (c *Controller) Pull(ctx context.Context, reference string) error {
	if err := c.d.Store.AddPendingPull(context.Background(), reference, time.Now()); err != nil {
		slog.Warn("the download will not resume after a restart", "reference", reference, "err", err)
	}
	ctx, stop := c.untilClosed(ctx)
	defer stop()
	_, err := c.svc.PullModel(ctx, reference, nil)
	if !c.isClosed() && !unreachable(err) {
		if rerr := c.d.Store.RemovePendingPull(context.Background(), reference); rerr != nil {
			slog.Warn("a finished download is still recorded", "reference", reference, "err", rerr)
		}
	}
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

// unreachable reports whether a pull failed for a reason that may pass (the Hub could not be
// reached: offline at the start that resumes it, a network that dropped; a full disk): the
// download stays recorded, to resume from its partial at the next start. A cancel, a reference
// that is wrong or names nothing, and an answer that is not safe to use are forgotten.
func unreachable(err error) bool {
	switch {
	case err == nil, core.IsModelsMoving(err), // refused before it began: nothing to resume
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, llm.ErrInvalidInput), errors.Is(err, llm.ErrModelNotFound),
		strings.Contains(err.Error(), source.ErrUnsafe.Error()), // wrapped with %v by the Hub source
		strings.Contains(err.Error(), "not safe to use"):
		return false
	}
	return true
}

// untilClosed is ctx, cancelled too when the controller closes.
func (c *Controller) untilClosed(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (c *Controller) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// PendingPulls names the downloads the app was running when it last quit, oldest first; the
// window starts each again (Pull), and the source resumes its partial file.
func (c *Controller) PendingPulls() []string {
	pending, err := c.d.Store.PendingPulls(context.Background())
	if err != nil {
		slog.Warn("the unfinished downloads cannot be resumed", "err", err)
		return nil
	}
	refs := make([]string, 0, len(pending))
	for _, p := range pending {
		refs = append(refs, p.Reference)
	}
	return refs
}

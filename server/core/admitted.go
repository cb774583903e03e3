package core

import (
	"context"

	"github.com/superfluid/superfluid/server/core/qos"
)

// The admission hook, for --nonstream-keepalive: the HTTP layer commits a non-streaming reply's
// 200 when its generation is admitted and pads the body with spaces until the JSON is ready.

type admittedKey struct{}

// WithAdmitted returns ctx carrying fn, which the core calls when a non-streaming generation of
// the request is admitted: its model is found, its prompt rendered and checked, and its place
// in the model's queue taken. Errors found before that keep their own status; fn may be called
// more than once (a request of several generations) and must not block.
func WithAdmitted(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, admittedKey{}, fn)
}

// admitted calls the request's admission hook, if it has one.
func admitted(ctx context.Context) {
	if fn, _ := ctx.Value(admittedKey{}).(func()); fn != nil {
		fn()
	}
}

// begin prepares the context of a generation request: its scheduling fixed (qos.go) and, for
// a streamed reply (which commits its own status), no admission hook.
func begin(ctx context.Context, sched Scheduling, def qos.Class, stream bool) context.Context {
	ctx = withScheduling(ctx, sched, def)
	if stream {
		ctx = context.WithValue(ctx, admittedKey{}, (func())(nil))
	}
	return ctx
}

package people

import "context"

type viaKey struct{}

// WithVia marks ctx as a change made from via (the desktop app's "desktop"), for audit hooks
// that get only a context (the bookings service's) to record where a change came from.
func WithVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// ViaFrom is the mark WithVia put on ctx; "" for none.
func ViaFrom(ctx context.Context) string {
	v, _ := ctx.Value(viaKey{}).(string)
	return v
}

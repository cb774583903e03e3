package forward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Headers of loop detection.
const (
	// ViaHeader lists the instance ids a request passed through, comma separated, oldest first.
	ViaHeader = "X-Superfluid-Via"
	// InstanceHeader names the server that answered, on every reply.
	InstanceHeader = "X-Superfluid-Instance"
)

// StatusLoopDetected is 508 Loop Detected, the status of a forwarding loop.
const StatusLoopDetected = http.StatusLoopDetected

// CodeForwardingLoop is the error code of a request that came back to a server it passed.
const CodeForwardingLoop = "forwarding_loop"

// NewInstanceID is a fresh random instance id. A server makes one per process: a loop can only
// run through servers that are up, so ids need be unique among live processes only, and a
// fresh one per start leaves nothing to store or to go stale when a data folder is copied to
// another machine (two machines with one stored id would refuse each other's requests).
func NewInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sf-" + hex.EncodeToString(b[:])
}

// ParseVia splits a Via header's value into its ids.
func ParseVia(header string) []string {
	var ids []string
	for _, id := range strings.Split(header, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// LoopError is the refusal of a request whose Via holds id: it came back to this server.
func LoopError(id string, via []string) *llm.StatusError {
	return &llm.StatusError{Status: StatusLoopDetected, Code: CodeForwardingLoop,
		Message: fmt.Sprintf("forwarding loop: the request already passed through this server (%s; via %s)", id, strings.Join(via, ", "))}
}

// CheckVia refuses a Via chain that holds id.
func CheckVia(id string, via []string) error {
	if id != "" && slices.Contains(via, id) {
		return LoopError(id, via)
	}
	return nil
}

type viaKey struct{}

// WithVia is ctx carrying the Via chain a request arrived with, for the forwarders that serve it.
func WithVia(ctx context.Context, via []string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// ViaFrom is the Via chain ctx carries (WithVia); nil when the request came straight from a client.
func ViaFrom(ctx context.Context) []string {
	via, _ := ctx.Value(viaKey{}).([]string)
	return via
}

// viaValue is the header a forwarder with instance id sends on for a request that came via.
func viaValue(ctx context.Context, id string) string {
	via := slices.Clone(ViaFrom(ctx))
	if id != "" {
		via = append(via, id)
	}
	return strings.Join(via, ", ")
}

// processInstance is this process's instance id (NewInstanceID says why one per process).
var processInstance = NewInstanceID()

// ProcessInstance is this process's instance id: the server's when its Config names none, and
// the one its forwarders append.
func ProcessInstance() string { return processInstance }

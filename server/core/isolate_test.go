package core_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestIsolateCachePartitions: with IsolateCache each caller's generations carry their own
// cache partition (the engine reuses prefixes only within one); without it every generation
// shares the one partition, as before.
func TestIsolateCachePartitions(t *testing.T) {
	for _, isolate := range []bool{false, true} {
		echo := &servertest.Echo{}
		svc := core.New(core.Config{IsolateCache: isolate}, nil, servertest.EchoModel("echo", echo))
		for _, key := range []string{"alice", "bob"} {
			ctx := auth.NewContext(context.Background(), &auth.Identity{ID: key, Name: key})
			req := &core.ChatRequest{Model: "echo", Messages: []chat.Message{{Role: "user", Content: "the same prompt"}}}
			if _, err := svc.Chat(ctx, req, func(int, llm.Event) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		chats := echo.Chats()
		a, b := chats[0].Generation.CachePartition, chats[1].Generation.CachePartition
		switch {
		case isolate && (a == "" || b == "" || a == b):
			t.Errorf("isolated: partitions %q and %q, want two distinct ones", a, b)
		case !isolate && (a != "" || b != ""):
			t.Errorf("not isolated: partitions %q and %q, want none", a, b)
		}
	}
}

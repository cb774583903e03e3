package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Failer is implemented by an engine that can break beyond repair, such as llama.cpp after a
// fatal llama_decode, whose context is then in an unknown state. Failed is closed once that
// has happened; Failure then says why.
type Failer interface {
	Failed() <-chan struct{}
	Failure() error
}

// Serve answers calls on l with engine until l is closed, and then returns nil. If engine is a
// Failer and fails, Serve stops taking calls, lets the calls in flight end with their errors
// (marked fatal, so the client knows the worker is going away) and returns the failure: the
// worker process must then exit non-zero so that the client starts a fresh one.
func Serve(l net.Listener, engine llm.Engine) error {
	var failed <-chan struct{}
	if f, ok := engine.(Failer); ok {
		failed = f.Failed()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	served := make(chan struct{})
	defer close(served)
	if failed != nil {
		go func() {
			select {
			case <-failed:
				l.Close()
			case <-served:
			}
		}()
	}
	for {
		conn, err := l.Accept()
		if err != nil {
			if closed(failed) {
				wg.Wait() // the calls in flight report the failure first
				return fmt.Errorf("engine failed: %w", engine.(Failer).Failure())
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(conn, engine, failed)
		}()
	}
}

// closed reports whether ch is closed; a nil ch never is.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func serveConn(conn net.Conn, engine llm.Engine, failed <-chan struct{}) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var c call
	enc := json.NewEncoder(conn)
	if err := json.Unmarshal(line, &c); err != nil {
		_ = enc.Encode(reply{End: true, Error: toWire(err)})
		return
	}
	if c.Op == opPing {
		// Answered here, never by the engine: a ping measures whether the process is alive and
		// scheduling, so a long generation holding the engine must not delay it.
		_ = enc.Encode(reply{End: true})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The client closes the connection to cancel; any further read returning means that.
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	fail := func(err error) {
		w := toWire(err)
		if w.Kind == kindEngine && closed(failed) {
			w.Kind = kindFatal
		}
		_ = enc.Encode(reply{End: true, Error: w})
	}
	switch c.Op {
	case opTokenize:
		tokens, err := engine.Tokenize(ctx, c.Text, c.AddSpecial, c.ParseSpecial)
		if err != nil {
			fail(err)
			return
		}
		_ = enc.Encode(reply{End: true, Tokens: tokens})
	case opSlots:
		reporter, ok := engine.(llm.SlotsReporter)
		if !ok {
			_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindEngine, Message: "this engine does not report lanes"}})
			return
		}
		slots, err := reporter.Slots(ctx)
		if err != nil {
			fail(err)
			return
		}
		_ = enc.Encode(reply{End: true, Slots: &slots})
	case opEmbed:
		embedder, ok := engine.(llm.Embedder)
		if !ok || c.Embed == nil {
			_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindUnsupported, Message: "this engine does not embed"}})
			return
		}
		res, err := embedder.Embed(ctx, c.Embed)
		if err != nil {
			fail(err)
			return
		}
		_ = enc.Encode(reply{End: true, Embed: res})
	case opReleaseAdapter:
		// An engine that keeps no adapters has none to free.
		if releaser, ok := engine.(llm.AdapterReleaser); ok {
			if err := releaser.ReleaseAdapter(ctx, c.Path); err != nil {
				fail(err)
				return
			}
		}
		_ = enc.Encode(reply{End: true})
	case opGenerate:
		if c.Generate == nil {
			_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindInvalidInput, Message: "generate call without a request"}})
			return
		}
		err := engine.Generate(ctx, c.Generate, func(ev llm.Event) error {
			return enc.Encode(reply{Event: &ev})
		})
		if err != nil {
			fail(err)
			return
		}
		_ = enc.Encode(reply{End: true})
	default:
		_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindInvalidInput, Message: "unknown call " + c.Op}})
	}
}

package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Serve answers calls on l with engine until l is closed. Each connection is one call.
func Serve(l net.Listener, engine llm.Engine) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(conn, engine)
		}()
	}
}

func serveConn(conn net.Conn, engine llm.Engine) {
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The client closes the connection to cancel; any further read returning means that.
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	switch c.Op {
	case opTokenize:
		tokens, err := engine.Tokenize(ctx, c.Text, c.AddSpecial, c.ParseSpecial)
		if err != nil {
			_ = enc.Encode(reply{End: true, Error: toWire(err)})
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
			_ = enc.Encode(reply{End: true, Error: toWire(err)})
			return
		}
		_ = enc.Encode(reply{End: true, Slots: &slots})
	case opGenerate:
		if c.Generate == nil {
			_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindInvalidInput, Message: "generate call without a request"}})
			return
		}
		err := engine.Generate(ctx, c.Generate, func(ev llm.Event) error {
			return enc.Encode(reply{Event: &ev})
		})
		if err != nil {
			_ = enc.Encode(reply{End: true, Error: toWire(err)})
			return
		}
		_ = enc.Encode(reply{End: true})
	default:
		_ = enc.Encode(reply{End: true, Error: &wireError{Kind: kindInvalidInput, Message: "unknown call " + c.Op}})
	}
}
